"""Fold means (and standard deviations) of one (dataset, feature set, method), set on its
MLflow parent run."""

from pathlib import Path

import numpy as np

from rankstudy import atomic, tracking
from rankstudy.jobs import job_logging

with job_logging(snakemake, "aggregate"):
    w = snakemake.wildcards
    folds = [atomic.read_json(p) for p in snakemake.input]
    names = sorted(folds[0]["metrics"])
    values = {k: np.array([f["metrics"][k] for f in folds], dtype=float) for k in names}
    summary = {"dataset": w.dataset, "featureset": w.featureset, "method": w.method,
               "folds": [f["fold"] for f in folds],
               "mean": {k: float(np.nanmean(v)) for k, v in values.items()},
               "std": {k: float(np.nanstd(v, ddof=1)) if len(v) > 1 else 0.0 for k, v in values.items()}}
    mlflow = snakemake.params.mlflow
    uri = tracking.resolve_tracking_uri(mlflow.get("tracking_uri"), Path(snakemake.params.results).resolve())
    summary["mlflow_parent_run_id"] = tracking.log_parent_metrics(
        uri, mlflow.get("experiment", "rankstudy"), dataset=w.dataset, featureset=w.featureset,
        method=w.method, metrics={f"mean.{k}": v for k, v in summary["mean"].items()})
    atomic.write_json(snakemake.output[0], summary)
    print(summary["mean"])
