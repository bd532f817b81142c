# Stage 3: one job per (study, dataset, feature set, method, fold): choose hyper-parameters on
# the validation split from the method's grid and save the chosen model. Its parameters are only
# what changes training (method, selection metric, relevance threshold, seed): report metrics are
# the evaluate job's.


TRAIN_PARAMS = dict(spec=training_spec, featureset=lambda w: FEATURESETS[w.featureset].to_dict(),
                    selection=SELECTION, seed=config["seed"])
# where a tuned method's study lives: handed to the job on its command line only, so a moved store
# retrains nothing (Snakemake leaves `step` out of its rerun check, as it is made from the outputs)
STEP_PARAMS = dict(TRAIN_PARAMS, tune_storage=tune_storage)


# tune.workers > 1: several jobs run the trials of one method and fold, sharing its Optuna study;
# the train job then fits the best trial. One process per worker, not per trial.
rule tune_trials:
    input:
        train=lambda w: features_of(w, "train"),
        vali=lambda w: features_of(w, "vali"),
        pairs=lambda w: L.fill(L.PAIRS, featureset=w.featureset, fold=w.fold, **protocol_keys(w)),
        meta=fold_meta_of,
        base=tune_base,
    output:
        trials=L.TUNE_WORKER,
    params:
        **TRAIN_PARAMS,
        step=step_command("tune_trials", STEP_PARAMS),
    log:
        L.log("tune_trials"),
    benchmark:
        L.benchmark("tune_trials")
    threads: train_threads
    resources:
        mem_mb=job_mem_mb(per_input_mb=3),
        runtime=job_runtime(per_input_mb=0.125),
    conda:
        ENV
    shell:
        STEP_SHELL


rule train:
    input:
        train=lambda w: features_of(w, "train"),
        vali=lambda w: features_of(w, "vali"),
        pairs=lambda w: L.fill(L.PAIRS, featureset=w.featureset, fold=w.fold, **protocol_keys(w)),
        meta=fold_meta_of,
        workers=tune_workers,
        base=tune_base,
    output:
        **L.in_dir(L.FOLD_DIR, L.TRAIN_OUTPUTS),
    params:
        **TRAIN_PARAMS,
        step=step_command("train", STEP_PARAMS),
    log:
        L.log("train"),
    benchmark:
        L.benchmark("train")
    threads: train_threads
    resources:
        mem_mb=job_mem_mb(per_input_mb=3),
        runtime=job_runtime(per_input_mb=0.125),
    conda:
        ENV
    shell:
        STEP_SHELL
