# Stage 2: normalisation and second-order features, fitted on each fold's training split only.


rule pair_correlations:
    input:
        train=RESULTS + "/data/{dataset}/fold{fold}/train.npz",
    output:
        RESULTS + "/features/{dataset}/fold{fold}/pair_correlations.tsv",
    params:
        normalization=config["features"]["normalization"],
        chunk_rows=config["features"].get("chunk_rows", 65536),
    log:
        RESULTS + "/logs/pair_correlations/{dataset}/fold{fold}.log",
    script:
        "../scripts/pair_correlations.py"


def correlations_if_needed(w):
    return [] if w.featureset == "first" else [
        RESULTS + f"/features/{w.dataset}/fold{w.fold}/pair_correlations.tsv"
    ]


rule featurize:
    input:
        train=RESULTS + "/data/{dataset}/fold{fold}/train.npz",
        vali=RESULTS + "/data/{dataset}/fold{fold}/vali.npz",
        test=RESULTS + "/data/{dataset}/fold{fold}/test.npz",
        correlations=correlations_if_needed,
    output:
        train=RESULTS + "/features/{dataset}/{featureset}/fold{fold}/train.npz",
        vali=RESULTS + "/features/{dataset}/{featureset}/fold{fold}/vali.npz",
        test=RESULTS + "/features/{dataset}/{featureset}/fold{fold}/test.npz",
        pairs=RESULTS + "/features/{dataset}/{featureset}/fold{fold}/pairs.tsv",
        transform=RESULTS + "/features/{dataset}/{featureset}/fold{fold}/transform.json",
    params:
        normalization=config["features"]["normalization"],
    log:
        RESULTS + "/logs/featurize/{dataset}/{featureset}/fold{fold}.log",
    script:
        "../scripts/featurize.py"
