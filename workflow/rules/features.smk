# Stage 2: normalisation and second-order features, fitted on each fold's training split only.


rule pair_correlations:
    input:
        train="results/data/{dataset}/fold{fold}/train.npz",
    output:
        "results/features/{dataset}/fold{fold}/pair_correlations.tsv",
    params:
        normalization=config["features"]["normalization"],
        chunk_rows=config["features"].get("chunk_rows", 65536),
    log:
        "results/logs/pair_correlations/{dataset}/fold{fold}.log",
    benchmark:
        "results/benchmarks/pair_correlations/{dataset}/fold{fold}.tsv"
    # one thread: its GEMMs take seconds even at MSLR-WEB30K size, and a two-thread job waits
    # for both cores while the jobs it unblocks (every rho feature set) wait for it
    threads: 1
    # upstream first, so the DAG fans out early and single-threaded jobs keep every core busy
    priority: 20
    resources:
        mem_mb=job_mem_mb(per_input_mb=3),
        runtime=job_runtime(per_input_mb=0.05),
    conda:
        ENV
    script:
        "../scripts/pair_correlations.py"


rule featurize:
    input:
        train="results/data/{dataset}/fold{fold}/train.npz",
        vali="results/data/{dataset}/fold{fold}/vali.npz",
        test="results/data/{dataset}/fold{fold}/test.npz",
        correlations=correlations_if_needed,
    output:
        train="results/features/{dataset}/{featureset}/fold{fold}/train.npz",
        vali="results/features/{dataset}/{featureset}/fold{fold}/vali.npz",
        test="results/features/{dataset}/{featureset}/fold{fold}/test.npz",
        pairs="results/features/{dataset}/{featureset}/fold{fold}/pairs.tsv",
        transform="results/features/{dataset}/{featureset}/fold{fold}/transform.json",
    params:
        normalization=config["features"]["normalization"],
        featureset=lambda w: FEATURESETS[w.featureset].to_dict(),
        dtype=config["features"].get("dtype", "float64"),
    log:
        "results/logs/featurize/{dataset}/{featureset}/fold{fold}.log",
    benchmark:
        "results/benchmarks/featurize/{dataset}/{featureset}/fold{fold}.tsv"
    threads: 1
    priority: 10
    resources:
        mem_mb=job_mem_mb(per_input_mb=3),
        runtime=job_runtime(per_input_mb=0.05),
    conda:
        ENV
    script:
        "../scripts/featurize.py"
