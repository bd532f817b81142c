# Stage 3: one job per (dataset, feature set, method, fold): choose hyper-parameters on the
# validation split from the method's grid, then score vali and test with the chosen model.


rule train:
    input:
        train=RESULTS + "/features/{dataset}/{featureset}/fold{fold}/train.npz",
        vali=RESULTS + "/features/{dataset}/{featureset}/fold{fold}/vali.npz",
        test=RESULTS + "/features/{dataset}/{featureset}/fold{fold}/test.npz",
    output:
        model=RESULTS + "/runs/{dataset}/{featureset}/{method}/fold{fold}/model.json",
        scores_vali=RESULTS + "/runs/{dataset}/{featureset}/{method}/fold{fold}/scores.vali.tsv",
        scores_test=RESULTS + "/runs/{dataset}/{featureset}/{method}/fold{fold}/scores.test.tsv",
        trec=RESULTS + "/runs/{dataset}/{featureset}/{method}/fold{fold}/run.test.trec",
        history=RESULTS + "/runs/{dataset}/{featureset}/{method}/fold{fold}/history.json",
        selection=RESULTS + "/runs/{dataset}/{featureset}/{method}/fold{fold}/selection.csv",
        resolved=RESULTS + "/runs/{dataset}/{featureset}/{method}/fold{fold}/config.resolved.json",
    params:
        spec=lambda w: config["methods"][w.method],
        evaluation=config["evaluation"],
        seed=config.get("seed", 0),
    log:
        RESULTS + "/logs/train/{dataset}/{featureset}/{method}/fold{fold}.log",
    script:
        "../scripts/train.py"
