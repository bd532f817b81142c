# Stage 4: per-query metrics of each fold run (logged to MLflow as a child run), then the
# fold means of each (dataset, feature set, method) on its MLflow parent run.


rule evaluate:
    input:
        scores_vali=RESULTS + "/runs/{dataset}/{featureset}/{method}/fold{fold}/scores.vali.tsv",
        scores_test=RESULTS + "/runs/{dataset}/{featureset}/{method}/fold{fold}/scores.test.tsv",
        model=RESULTS + "/runs/{dataset}/{featureset}/{method}/fold{fold}/model.json",
        trec=RESULTS + "/runs/{dataset}/{featureset}/{method}/fold{fold}/run.test.trec",
        history=RESULTS + "/runs/{dataset}/{featureset}/{method}/fold{fold}/history.json",
        selection=RESULTS + "/runs/{dataset}/{featureset}/{method}/fold{fold}/selection.csv",
        resolved=RESULTS + "/runs/{dataset}/{featureset}/{method}/fold{fold}/config.resolved.json",
        meta=RESULTS + "/data/{dataset}/fold{fold}/meta.json",
    output:
        per_query_vali=RESULTS + "/runs/{dataset}/{featureset}/{method}/fold{fold}/metrics.per_query.vali.csv",
        per_query_test=RESULTS + "/runs/{dataset}/{featureset}/{method}/fold{fold}/metrics.per_query.test.csv",
        summary=RESULTS + "/runs/{dataset}/{featureset}/{method}/fold{fold}/summary.json",
    params:
        evaluation=config["evaluation"],
        mlflow=config.get("mlflow", {}),
        results=RESULTS,
        commit=git_commit(Path(workflow.basedir)),
    log:
        RESULTS + "/logs/evaluate/{dataset}/{featureset}/{method}/fold{fold}.log",
    script:
        "../scripts/evaluate.py"


rule aggregate:
    input:
        fold_summaries,
    output:
        RESULTS + "/runs/{dataset}/{featureset}/{method}/summary.json",
    params:
        mlflow=config.get("mlflow", {}),
        results=RESULTS,
    log:
        RESULTS + "/logs/aggregate/{dataset}/{featureset}/{method}.log",
    script:
        "../scripts/aggregate.py"
