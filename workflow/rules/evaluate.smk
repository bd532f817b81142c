# Stage 4: score vali and test with each trained model and compute the per-query metrics (and a
# random ranking's, for the "did it learn" check); then the fold means of each (study, dataset,
# feature set, method) and what its MLflow runs will hold: one child run per training of a fold
# (kept when other folds are rerun) under one parent holding the means. The tables job logs every
# method's runs of a (study, dataset) in one process: MLflow's start-up (about a second of
# imports) once per table, not once per method, and out of the fold jobs.


rule evaluate:
    input:
        model=f"{L.FOLD_DIR}/model.json",
        fit=f"{L.FOLD_DIR}/fit.json",
        vali=lambda w: features_of(w, "vali"),
        test=lambda w: features_of(w, "test"),
        meta=fold_meta_of,
    output:
        **L.in_dir(L.FOLD_DIR, L.EVALUATE_OUTPUTS),
    params:
        # the metric set: adding a metric re-evaluates (never retrains), dropping an extra one does not
        evaluation=evaluation_of,
        step=step_command("evaluate", {"evaluation": evaluation_of}),
    log:
        L.log("evaluate"),
    benchmark:
        L.benchmark("evaluate")
    threads: 1
    resources:
        mem_mb=job_mem_mb(per_input_mb=3),
        runtime=job_runtime(per_input_mb=0.05),
    conda:
        ENV
    shell:
        STEP_SHELL


rule aggregate:
    input:
        unpack(aggregate_inputs),
    output:
        summary=L.METHOD_SUMMARY,
        per_query=L.METHOD_PER_QUERY,
        mlflow=L.METHOD_MLFLOW,
    params:
        folds=FOLDS,
        spec=training_spec,
    log:
        L.log("aggregate"),
    benchmark:
        L.benchmark("aggregate")
    threads: 1
    resources:
        mem_mb=job_mem_mb(per_input_mb=3),
        runtime=job_runtime(),
    conda:
        ENV
    script:
        "../scripts/aggregate.py"
