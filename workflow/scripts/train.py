"""Train one method on one fold: choose its hyper-parameters on vali from the configured grid,
then write the chosen model, its scores on vali and test, a TREC run, the per-query metrics
of both splits, its training curve and a summary."""

import pandas as pd

from rankstudy import atomic, metrics, runfiles
from rankstudy.config import is_quadratic
from rankstudy.data import load_split
from rankstudy.jobs import job_logging
from rankstudy.selection import select_and_fit

with job_logging(snakemake, "train"):
    w, spec, evaluation = snakemake.wildcards, snakemake.params.spec, snakemake.params.evaluation
    out = snakemake.output
    splits = {s: load_split(snakemake.input[s]) for s in ("train", "vali", "test")}
    meta = atomic.read_json(snakemake.input.meta)
    options = {"rel_threshold": evaluation.get("rel_threshold", 1), "max_label": meta["max_label"],
               "no_relevant": evaluation.get("no_relevant", "zero")}
    print(f"{w.method} on {w.dataset} [{w.featureset}] fold {w.fold}: "
          f"{splits['train'].n_queries} training queries, {meta['n_features']} features")
    params = {"seed": snakemake.params.seed, **(spec.get("params") or {})}
    if is_quadratic(w.featureset):
        # the quadratic functional scores the selected products itself, chunk by chunk
        selected = pd.read_csv(snakemake.input.pairs, sep="\t")
        params.update(functional="quadratic", pairs=(selected[["i", "j"]].to_numpy() - 1).tolist())
        print(f"quadratic functional over {len(selected)} second-order pairs")
    ranker, chosen, table = select_and_fit(
        spec["kind"], params, spec.get("grid"), splits["train"], splits["vali"],
        metric=evaluation.get("selection_metric", "ndcg@10"),
        metric_options={k: v for k, v in options.items() if k != "max_label"})
    ranker.save(out.model)
    # ndcg@1..10 always, for the NDCG@k plot
    names = list(dict.fromkeys([f"ndcg@{k}" for k in range(1, 11)] + evaluation["metrics"]))
    means = {}
    for split in ("vali", "test"):
        data = splits[split]
        scores = ranker.predict(data)
        runfiles.write_scores(data, scores, out[f"scores_{split}"])
        per_query = metrics.evaluate(data, scores, names, **options)
        atomic.write_csv(per_query, out[f"per_query_{split}"], float_format="%.17g")
        means.update({f"{split}.{k}": v for k, v in metrics.mean_metrics(per_query).items()})
        if split == "test":
            runfiles.write_trec_run(data, scores, out.trec, tag=f"{w.method}.{w.featureset}")
    print({k: round(v, 4) for k, v in means.items() if k.startswith("test.")})
    atomic.write_json(out.history, ranker.history_)
    atomic.write_csv(table, out.selection)
    resolved = {"dataset": w.dataset, "featureset": w.featureset, "method": w.method, "fold": int(w.fold),
                "kind": spec["kind"], "params": chosen, "grid": spec.get("grid") or {},
                "evaluation": {**evaluation, **options}, "seed": snakemake.params.seed}
    atomic.write_json(out.resolved, resolved)
    atomic.write_json(out.summary, {**resolved, "metrics": means, "fingerprint": meta["fingerprint"],
                                    "test.n_queries": splits["test"].n_queries})
