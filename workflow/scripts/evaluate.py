"""Per-query metrics of one fold run on vali and test, recomputed from its score files, a
summary, and the fold's MLflow child run (replacing any earlier run of the same fold)."""

from pathlib import Path

from rankstudy import atomic, metrics, runfiles, tracking
from rankstudy.data import RankData
from rankstudy.jobs import job_logging

with job_logging(snakemake, "evaluate"):
    w, evaluation = snakemake.wildcards, snakemake.params.evaluation
    meta = atomic.read_json(snakemake.input.meta)
    resolved = atomic.read_json(snakemake.input.resolved)
    options = {"rel_threshold": evaluation.get("rel_threshold", 1), "max_label": meta["max_label"],
               "no_relevant": evaluation.get("no_relevant", "zero")}
    names = list(dict.fromkeys([f"ndcg@{k}" for k in range(1, 11)] + evaluation["metrics"]))
    means = {}
    for split in ("vali", "test"):
        frame, offsets = runfiles.read_scores(snakemake.input[f"scores_{split}"])
        values = metrics.per_query(frame["score"].to_numpy(), frame["label"].to_numpy(), offsets, names, **options)
        table = frame.iloc[offsets[:-1]][["qid"]].reset_index(drop=True).assign(**values)
        atomic.write_csv(table, snakemake.output[f"per_query_{split}"], float_format="%.17g")
        means.update({f"{split}.{k}": v for k, v in metrics.mean_metrics(table).items()})
    summary = {"dataset": w.dataset, "featureset": w.featureset, "method": w.method, "fold": int(w.fold),
               "params": resolved["params"], "metrics": means, "fingerprint": meta["fingerprint"],
               "evaluation": options, "test.n_queries": meta["test.n_queries"]}
    print({k: round(v, 4) for k, v in means.items() if k.startswith("test.")})
    mlflow = snakemake.params.mlflow
    uri = tracking.resolve_tracking_uri(mlflow.get("tracking_uri"), Path(snakemake.params.results).resolve())
    run_id = tracking.log_fold_run(
        uri, mlflow.get("experiment", "rankstudy"), dataset=w.dataset, featureset=w.featureset,
        method=w.method, fold=int(w.fold),
        params={"method": resolved["params"], "kind": resolved["kind"], "featureset": w.featureset,
                "fold": w.fold, "data_fingerprint": meta["fingerprint"], "evaluation": options},
        metrics=means, history=atomic.read_json(snakemake.input.history),
        artifacts=[Path(p) for p in (snakemake.input.model, snakemake.input.scores_test, snakemake.input.trec,
                                     snakemake.input.selection, snakemake.input.resolved,
                                     snakemake.output.per_query_vali, snakemake.output.per_query_test)],
        tags={"git_commit": snakemake.params.commit})
    summary["mlflow_run_id"] = run_id
    atomic.write_json(snakemake.output.summary, summary)
