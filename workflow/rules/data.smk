# Stage 1: make each data set available (embedded generator, a local folder, or a download),
# then parse each fold once into a binary cache that later rules read instead of text.


rule fetch_dataset:
    output:
        RESULTS + "/data/{dataset}/source.json",
    params:
        data_root=config.get("data_root", "data"),
        synthetic=config.get("synthetic", {}),
        seed=config.get("seed", 0),
    log:
        RESULTS + "/logs/fetch_dataset/{dataset}.log",
    script:
        "../scripts/fetch_dataset.py"


rule prepare_fold:
    input:
        RESULTS + "/data/{dataset}/source.json",
    output:
        train=RESULTS + "/data/{dataset}/fold{fold}/train.npz",
        vali=RESULTS + "/data/{dataset}/fold{fold}/vali.npz",
        test=RESULTS + "/data/{dataset}/fold{fold}/test.npz",
        meta=RESULTS + "/data/{dataset}/fold{fold}/meta.json",
    params:
        cleaning=config.get("cleaning", {}),
        rel_threshold=config["evaluation"].get("rel_threshold", 1),
    log:
        RESULTS + "/logs/prepare_fold/{dataset}/fold{fold}.log",
    script:
        "../scripts/prepare_fold.py"
