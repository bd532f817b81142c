# Stage 4: score vali and test with each trained model and compute the per-query metrics; then
# the fold means of each (dataset, feature set, method) and its MLflow runs: one child run per
# training of a fold (kept when other folds are rerun) under one parent holding the means.
# One MLflow job per parent keeps MLflow's start-up cost and store lock out of the fold jobs.


rule evaluate:
    input:
        model="results/runs/{dataset}/{featureset}/{method}/fold{fold}/model.json",
        fit="results/runs/{dataset}/{featureset}/{method}/fold{fold}/fit.json",
        vali="results/features/{dataset}/{featureset}/fold{fold}/vali.npz",
        test="results/features/{dataset}/{featureset}/fold{fold}/test.npz",
        meta="results/data/{dataset}/fold{fold}/meta.json",
    output:
        scores_vali="results/runs/{dataset}/{featureset}/{method}/fold{fold}/scores.vali.tsv",
        scores_test="results/runs/{dataset}/{featureset}/{method}/fold{fold}/scores.test.tsv",
        trec="results/runs/{dataset}/{featureset}/{method}/fold{fold}/run.test.trec",
        per_query_vali="results/runs/{dataset}/{featureset}/{method}/fold{fold}/metrics.per_query.vali.csv",
        per_query_test="results/runs/{dataset}/{featureset}/{method}/fold{fold}/metrics.per_query.test.csv",
        resolved="results/runs/{dataset}/{featureset}/{method}/fold{fold}/config.resolved.json",
        summary="results/runs/{dataset}/{featureset}/{method}/fold{fold}/summary.json",
    params:
        evaluation=config["evaluation"],
    log:
        "results/logs/evaluate/{dataset}/{featureset}/{method}/fold{fold}.log",
    benchmark:
        "results/benchmarks/evaluate/{dataset}/{featureset}/{method}/fold{fold}.tsv"
    threads: 1
    resources:
        mem_mb=job_mem_mb(per_input_mb=3),
        runtime=job_runtime(per_input_mb=0.05),
    conda:
        ENV
    script:
        "../scripts/evaluate.py"


rule aggregate:
    input:
        fold_summaries,
    output:
        summary="results/runs/{dataset}/{featureset}/{method}/summary.json",
        per_query="results/runs/{dataset}/{featureset}/{method}/metrics.per_query.test.csv",
    params:
        mlflow=MLFLOW,
    log:
        "results/logs/aggregate/{dataset}/{featureset}/{method}.log",
    benchmark:
        "results/benchmarks/aggregate/{dataset}/{featureset}/{method}.tsv"
    threads: 1
    resources:
        mem_mb=job_mem_mb(per_input_mb=3),
        runtime=job_runtime(),
    conda:
        ENV
    script:
        "../scripts/aggregate.py"
