# Stage 1: make each data set available (embedded generator, a local folder, or a download),
# parse each fold once into a binary cache that every protocol reads, then clean it as the
# protocol says. Paths: rankstudy.pipeline.layout.

# On a cluster the download runs where snakemake runs: compute nodes often have no network.
localrules:
    fetch_dataset,


rule fetch_dataset:
    output:
        L.SOURCE,
    params:
        dataset=lambda w: DATASET_OF[w.data],
        # only what changes this data set's record: a generator's settings, or the registry entry
        source=lambda w: source_settings(SETTINGS.registry[DATASET_OF[w.data]], config),
    log:
        L.log("fetch_dataset"),
    benchmark:
        L.benchmark("fetch_dataset")
    threads: 1
    resources:
        mem_mb=job_mem_mb(),
        runtime=job_runtime(base=60),
    conda:
        ENV
    script:
        "../scripts/fetch_dataset.py"


rule parse_fold:
    input:
        L.SOURCE,
    output:
        **{s: prepared_split(L.PARSED.replace("{split}", s)) for s in SPLITS},
        meta=L.PARSED_META,
    params:
        dataset=lambda w: DATASET_OF[w.data],
    log:
        L.log("parse_fold"),
    benchmark:
        L.benchmark("parse_fold")
    threads: 1
    priority: 40  # upstream first (see pair_correlations)
    resources:
        mem_mb=job_mem_mb(),
        runtime=job_runtime(),
    conda:
        ENV
    script:
        "../scripts/parse_fold.py"


rule clean_fold:
    input:
        **{s: L.PARSED.replace("{split}", s) for s in SPLITS},
        parsed=L.PARSED_META,
    output:
        **{s: prepared_split(L.CLEANED.replace("{split}", s)) for s in SPLITS},
        meta=L.FOLD_META,
    params:
        # the cleaning name is a digest of these two; one spelling per setting (binarize: [] is no
        # binarize), so studies that share the cleaned data share its params and rerun nothing
        cleaning=L.cleaning_rules(config["cleaning"]),
        rel_threshold=EVALUATION["rel_threshold"],
    log:
        L.log("clean_fold"),
    benchmark:
        L.benchmark("clean_fold")
    threads: 1
    priority: 30
    resources:
        mem_mb=job_mem_mb(per_input_mb=3),
        runtime=job_runtime(),
    conda:
        ENV
    script:
        "../scripts/clean_fold.py"
