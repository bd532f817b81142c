# Stage 3: one job per (dataset, feature set, method, fold): choose hyper-parameters on the
# validation split from the method's grid, score vali and test with the chosen model, and
# write the per-query metrics of both splits.


rule train:
    input:
        train="results/features/{dataset}/{featureset}/fold{fold}/train.npz",
        vali="results/features/{dataset}/{featureset}/fold{fold}/vali.npz",
        test="results/features/{dataset}/{featureset}/fold{fold}/test.npz",
        meta="results/data/{dataset}/fold{fold}/meta.json",
        pairs="results/features/{dataset}/{featureset}/fold{fold}/pairs.tsv",
    output:
        model="results/runs/{dataset}/{featureset}/{method}/fold{fold}/model.json",
        scores_vali="results/runs/{dataset}/{featureset}/{method}/fold{fold}/scores.vali.tsv",
        scores_test="results/runs/{dataset}/{featureset}/{method}/fold{fold}/scores.test.tsv",
        trec="results/runs/{dataset}/{featureset}/{method}/fold{fold}/run.test.trec",
        per_query_vali="results/runs/{dataset}/{featureset}/{method}/fold{fold}/metrics.per_query.vali.csv",
        per_query_test="results/runs/{dataset}/{featureset}/{method}/fold{fold}/metrics.per_query.test.csv",
        history="results/runs/{dataset}/{featureset}/{method}/fold{fold}/history.json",
        selection="results/runs/{dataset}/{featureset}/{method}/fold{fold}/selection.csv",
        resolved="results/runs/{dataset}/{featureset}/{method}/fold{fold}/config.resolved.json",
        summary="results/runs/{dataset}/{featureset}/{method}/fold{fold}/summary.json",
    params:
        spec=lambda w: config["methods"][w.method],
        evaluation=config["evaluation"],
        seed=config.get("seed", 0),
    log:
        "results/logs/train/{dataset}/{featureset}/{method}/fold{fold}.log",
    conda:
        ENV
    script:
        "../scripts/train.py"
