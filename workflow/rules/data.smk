# Stage 1: make each data set available (embedded generator, a local folder, or a download),
# then parse each fold once into a binary cache that later rules read instead of text.

# On a cluster the download runs where snakemake runs: compute nodes often have no network.
localrules:
    fetch_dataset,


rule fetch_dataset:
    output:
        "results/data/{dataset}/source.json",
    params:
        entry=lambda w: SETTINGS.registry[w.dataset],
        data_root=config.get("data_root", "data"),
        synthetic=config.get("synthetic", {}),
        synthetic_qa=config.get("synthetic_qa", {}),
        seed=config.get("seed", 0),
    log:
        "results/logs/fetch_dataset/{dataset}.log",
    benchmark:
        "results/benchmarks/fetch_dataset/{dataset}.tsv"
    threads: 1
    resources:
        mem_mb=job_mem_mb(),
        runtime=job_runtime(base=60),
    conda:
        ENV
    script:
        "../scripts/fetch_dataset.py"


rule prepare_fold:
    input:
        "results/data/{dataset}/source.json",
    output:
        train=prepared_split("results/data/{dataset}/fold{fold}/train.npz"),
        vali=prepared_split("results/data/{dataset}/fold{fold}/vali.npz"),
        test=prepared_split("results/data/{dataset}/fold{fold}/test.npz"),
        meta="results/data/{dataset}/fold{fold}/meta.json",
    params:
        cleaning=config.get("cleaning", {}),
        rel_threshold=config["evaluation"].get("rel_threshold", 1),
    log:
        "results/logs/prepare_fold/{dataset}/fold{fold}.log",
    benchmark:
        "results/benchmarks/prepare_fold/{dataset}/fold{fold}.tsv"
    threads: 1
    priority: 30  # upstream first (see pair_correlations)
    resources:
        mem_mb=job_mem_mb(),
        runtime=job_runtime(),
    conda:
        ENV
    script:
        "../scripts/prepare_fold.py"
