# Stage 3: one job per (dataset, feature set, method, fold): choose hyper-parameters on the
# validation split from the method's grid and save the chosen model. Its parameters are only
# what changes training (method, selection metric, seed): report metrics are the evaluate job's.


rule train:
    input:
        train="results/features/{dataset}/{featureset}/fold{fold}/train.npz",
        vali="results/features/{dataset}/{featureset}/fold{fold}/vali.npz",
        meta="results/data/{dataset}/fold{fold}/meta.json",
        pairs="results/features/{dataset}/{featureset}/fold{fold}/pairs.tsv",
    output:
        model="results/runs/{dataset}/{featureset}/{method}/fold{fold}/model.json",
        history="results/runs/{dataset}/{featureset}/{method}/fold{fold}/history.json",
        selection="results/runs/{dataset}/{featureset}/{method}/fold{fold}/selection.csv",
        fit="results/runs/{dataset}/{featureset}/{method}/fold{fold}/fit.json",
    params:
        spec=training_spec,
        featureset=lambda w: FEATURESETS[w.featureset].to_dict(),
        selection=SELECTION,
        seed=config.get("seed", 0),
    log:
        "results/logs/train/{dataset}/{featureset}/{method}/fold{fold}.log",
    benchmark:
        "results/benchmarks/train/{dataset}/{featureset}/{method}/fold{fold}.tsv"
    threads: train_threads
    resources:
        mem_mb=job_mem_mb(per_input_mb=3),
        runtime=job_runtime(per_input_mb=0.125),
    conda:
        ENV
    script:
        "../scripts/train.py"
