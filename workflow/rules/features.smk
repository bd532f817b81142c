# Stage 2: normalisation and second-order features, fitted on each fold's training split only.


rule pair_correlations:
    input:
        train=L.CLEANED.replace("{split}", "train"),
    output:
        L.CORRELATIONS,
    params:
        normalization=config["features"]["normalization"],
    log:
        L.log("pair_correlations"),
    benchmark:
        L.benchmark("pair_correlations")
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
        **{s: L.CLEANED.replace("{split}", s) for s in SPLITS},
        correlations=correlations_if_needed,
    output:
        **{s: L.FEATURES.replace("{split}", s) for s in SPLITS},
        pairs=L.PAIRS,
        transform=L.TRANSFORM,
    params:
        normalization=config["features"]["normalization"],
        featureset=lambda w: FEATURESETS[w.featureset].to_dict(),
        dtype=config["features"]["dtype"],
    log:
        L.log("featurize"),
    benchmark:
        L.benchmark("featurize")
    threads: 1
    priority: 10
    resources:
        mem_mb=job_mem_mb(per_input_mb=3),
        runtime=job_runtime(per_input_mb=0.05),
    conda:
        ENV
    script:
        "../scripts/featurize.py"
