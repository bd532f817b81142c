"""Score the vali and test splits of one fold with the trained model, and write the scores, a
TREC run, the per-query metrics of both splits, the resolved configuration and a summary."""

import time

from rankstudy.data.kinds import load_split
from rankstudy.evaluation import metrics, runfiles
from rankstudy.pipeline.jobs import job_logging
from rankstudy.rankers.registry import load_ranker
from rankstudy.util import atomic

with job_logging(snakemake, "evaluate"):
    w, evaluation, out = snakemake.wildcards, snakemake.params.evaluation, snakemake.output
    meta = atomic.read_json(snakemake.input.meta)
    fit = atomic.read_json(snakemake.input.fit)
    ranker = load_ranker(snakemake.input.model)
    options = {"rel_threshold": evaluation.get("rel_threshold", 1), "max_label": meta["max_label"],
               "no_relevant": evaluation.get("no_relevant", "zero")}
    # ndcg@1..10 and p@1..10 always, for the NDCG@k and P@k plots
    names = list(dict.fromkeys([f"{m}@{k}" for m in ("ndcg", "p") for k in range(1, 11)] + evaluation["metrics"]))
    means, n_queries = {}, {}
    for split in ("vali", "test"):
        data = load_split(snakemake.input[split])
        scores = ranker.predict(data)
        runfiles.write_scores(data, scores, out[f"scores_{split}"])
        per_query = metrics.evaluate(data, scores, names, **options)
        atomic.write_csv(per_query, out[f"per_query_{split}"], float_format="%.17g")
        means.update({f"{split}.{k}": v for k, v in metrics.mean_metrics(per_query).items()})
        n_queries[split] = data.n_queries
        if split == "test":
            runfiles.write_trec_run(data, scores, out.trec, tag=f"{w.method}.{w.featureset}")
    print({k: round(v, 4) for k, v in means.items() if k.startswith("test.")})
    resolved = {"dataset": w.dataset, "featureset": w.featureset, "method": w.method, "fold": int(w.fold),
                "kind": fit["kind"], "params": fit["params"], "grid": fit["grid"], "seed": fit["seed"],
                "selection": fit["selection"], "evaluation": {**evaluation, **options}}
    atomic.write_json(out.resolved, resolved)
    atomic.write_json(out.summary, {
        **resolved, "metrics": means, "fingerprint": meta["fingerprint"], "test.n_queries": n_queries["test"],
        # the fold's MLflow run: one per training (uid), from its start to the end of this job
        "run": {"uid": fit["uid"], "git_commit": fit["git_commit"], "started_ms": fit["started_ms"],
                "finished_ms": int(time.time() * 1000)}})
