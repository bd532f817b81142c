"""Train one method on one fold: choose its hyper-parameters on vali from the configured grid,
then write the chosen model, its scores on vali and test, a TREC run and its training curve."""

from rankstudy import atomic, runfiles
from rankstudy.data import load_npz
from rankstudy.jobs import job_logging
from rankstudy.selection import select_and_fit

with job_logging(snakemake, "train"):
    w, spec, evaluation = snakemake.wildcards, snakemake.params.spec, snakemake.params.evaluation
    splits = {s: load_npz(snakemake.input[s]) for s in ("train", "vali", "test")}
    print(f"{w.method} on {w.dataset} [{w.featureset}] fold {w.fold}: "
          f"{splits['train'].n_queries} training queries, {splits['train'].n_features} features")
    params = {"seed": snakemake.params.seed, **(spec.get("params") or {})}
    ranker, chosen, table = select_and_fit(
        spec["kind"], params, spec.get("grid"), splits["train"], splits["vali"],
        metric=evaluation.get("selection_metric", "ndcg@10"),
        metric_options={"rel_threshold": evaluation.get("rel_threshold", 1),
                        "no_relevant": evaluation.get("no_relevant", "zero")})
    ranker.save(snakemake.output.model)
    for split in ("vali", "test"):
        runfiles.write_scores(splits[split], ranker.predict(splits[split]), snakemake.output[f"scores_{split}"])
    runfiles.write_trec_run(splits["test"], ranker.predict(splits["test"]), snakemake.output.trec,
                            tag=f"{w.method}.{w.featureset}")
    atomic.write_json(snakemake.output.history, ranker.history_)
    atomic.write_csv(table, snakemake.output.selection)
    atomic.write_json(snakemake.output.resolved, {
        "dataset": w.dataset, "featureset": w.featureset, "method": w.method, "fold": int(w.fold),
        "kind": spec["kind"], "params": chosen, "grid": spec.get("grid") or {}, "evaluation": evaluation,
        "seed": snakemake.params.seed})
