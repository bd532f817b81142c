"""Fold means (and standard deviations) of one (dataset, feature set, method), and its MLflow
runs: one child per fold with the fold's params, metrics, training curve and artifacts, under
a parent run holding the means. A fold logged before is replaced, never duplicated."""

from pathlib import Path

import numpy as np
import pandas as pd

from rankstudy import atomic, tracking
from rankstudy.jobs import job_logging

ARTIFACTS = ("model.json", "scores.test.tsv", "run.test.trec", "metrics.per_query.vali.csv",
             "metrics.per_query.test.csv", "selection.csv", "config.resolved.json")

with job_logging(snakemake, "aggregate"):
    w, mlflow = snakemake.wildcards, snakemake.params.mlflow
    uri = tracking.resolve_tracking_uri(mlflow["tracking_uri"], "results")
    experiment = mlflow.get("experiment", "rankstudy")
    folds = []
    for path in map(Path, snakemake.input):
        fold = atomic.read_json(path)
        # every hyper-parameter candidate's validation score, as a step metric (step = candidate)
        selection = pd.read_csv(path.parent / "selection.csv")
        scored = [c for c in selection.columns if c.startswith("vali.")]
        candidates = [{"step": int(row["candidate"]), **{f"selection.{c}": float(row[c]) for c in scored}}
                      for _, row in selection.iterrows()]
        run_id = tracking.log_fold_run(
            uri, experiment, dataset=w.dataset, featureset=w.featureset, method=w.method, fold=fold["fold"],
            params={"method": fold["params"], "kind": fold["kind"], "featureset": w.featureset,
                    "fold": fold["fold"], "data_fingerprint": fold["fingerprint"], "evaluation": fold["evaluation"]},
            metrics=fold["metrics"], history=atomic.read_json(path.parent / "history.json") + candidates,
            artifacts=[path.parent / name for name in ARTIFACTS],
            tags={"git_commit": snakemake.params.commit, "data_fingerprint": fold["fingerprint"]})
        print(f"fold {fold['fold']}: MLflow run {run_id}")
        folds.append({**fold, "mlflow_run_id": run_id})
    names = sorted(folds[0]["metrics"])
    values = {k: np.array([f["metrics"][k] for f in folds], dtype=float) for k in names}
    summary = {"dataset": w.dataset, "featureset": w.featureset, "method": w.method,
               "folds": [f["fold"] for f in folds], "fold_runs": {f["fold"]: f["mlflow_run_id"] for f in folds},
               "mean": {k: float(np.nanmean(v)) for k, v in values.items()},
               "std": {k: float(np.nanstd(v, ddof=1)) if len(v) > 1 else 0.0 for k, v in values.items()}}
    summary["mlflow_parent_run_id"] = tracking.log_parent_metrics(
        uri, experiment, dataset=w.dataset, featureset=w.featureset, method=w.method,
        metrics={**{f"mean.{k}": v for k, v in summary["mean"].items()},
                 **{f"std.{k}": v for k, v in summary["std"].items()}},
    )
    atomic.write_json(snakemake.output[0], summary)
    print({k: round(v, 4) for k, v in summary["mean"].items() if k.startswith("test.")})
