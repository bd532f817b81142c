# Stage 4: fold means of each (dataset, feature set, method), and its MLflow runs: one child
# run per fold (replacing any earlier run of that fold) under one parent holding the means.
# One job per parent keeps MLflow's start-up cost and store lock out of the per-fold jobs.


rule aggregate:
    input:
        fold_summaries,
    output:
        "results/runs/{dataset}/{featureset}/{method}/summary.json",
    params:
        mlflow=MLFLOW,
        commit=git_commit(Path(workflow.basedir)),
    log:
        "results/logs/aggregate/{dataset}/{featureset}/{method}.log",
    conda:
        ENV
    script:
        "../scripts/aggregate.py"
