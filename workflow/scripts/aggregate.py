"""Fold means (and standard deviations) of one (dataset, feature set, method), its test
metrics per query over all folds, and its MLflow runs: one child per training of a fold, kept
(with its run id) while that training stands, under a parent run holding the means and the
folds they cover."""

from pathlib import Path

import numpy as np
import pandas as pd

from rankstudy.pipeline.jobs import job_logging
from rankstudy.tracking import runs as tracking
from rankstudy.util import atomic

ARTIFACTS = ("model.json", "scores.test.tsv", "run.test.trec", "metrics.per_query.vali.csv",
             "metrics.per_query.test.csv", "selection.csv", "config.resolved.json")


def fold_timing(run: Path, selection: pd.DataFrame) -> dict:
    """Seconds of one fold's training: the whole train job (every grid candidate), the chosen
    candidate's fit, and of that the solver's time in the argmax and in the QP when it records
    them (the cutting-plane solver does)."""
    fit, history = atomic.read_json(run / "fit.json"), atomic.read_json(run / "history.json")
    recorded = lambda key: sum(h[key] for h in history) if history and key in history[0] else None  # noqa: E731
    return {"train_job_seconds": (fit["finished_ms"] - fit["started_ms"]) / 1000.0,
            "fit_seconds": float(selection.loc[selection["selected"], "fit_seconds"].iloc[0]),
            "argmax_seconds": recorded("argmax_seconds"), "qp_seconds": recorded("qp_seconds")}


def job_benchmarks(w, fold: int) -> dict:
    """Wall and CPU seconds and peak memory (MB) of the jobs behind this fold's run, from the
    files their `benchmark:` directives wrote (absent for jobs run before they existed)."""
    jobs = {"prepare_fold": f"{w.dataset}/fold{fold}", "featurize": f"{w.dataset}/{w.featureset}/fold{fold}",
            "train": f"{w.dataset}/{w.featureset}/{w.method}/fold{fold}",
            "evaluate": f"{w.dataset}/{w.featureset}/{w.method}/fold{fold}"}
    found = {}
    for rule, name in jobs.items():
        path = Path("results/benchmarks") / rule / f"{name}.tsv"
        if path.exists():
            bench = pd.read_csv(path, sep="\t").iloc[-1]
            found.update({f"job.{rule}.wall_s": float(bench["s"]), f"job.{rule}.cpu_s": float(bench["cpu_time"]),
                          f"job.{rule}.max_rss_mb": float(bench["max_rss"])})
    return found


with job_logging(snakemake, "aggregate"):
    w, mlflow = snakemake.wildcards, snakemake.params.mlflow
    uri = tracking.resolve_tracking_uri(mlflow["tracking_uri"], "results")
    experiment = mlflow.get("experiment", "rankstudy")
    folds, per_query, timing = [], [], []
    for path in map(Path, snakemake.input):
        fold = atomic.read_json(path)
        run = fold["run"]
        # every hyper-parameter candidate's validation score, as a step metric (step = candidate)
        selection = pd.read_csv(path.parent / "selection.csv")
        scored = [c for c in selection.columns if c.startswith("vali.")]
        candidates = [{"step": int(row["candidate"]), **{f"selection.{c}": float(row[c]) for c in scored}}
                      for _, row in selection.iterrows()]
        run_id = tracking.log_fold_run(
            uri, experiment, dataset=w.dataset, featureset=w.featureset, method=w.method, fold=fold["fold"],
            params={"method": fold["params"], "kind": fold["kind"], "featureset": w.featureset,
                    "fold": fold["fold"], "data_fingerprint": fold["fingerprint"], "selection": fold["selection"]},
            metrics={**fold["metrics"], **job_benchmarks(w, fold["fold"])}, history=atomic.read_json(path.parent / "history.json") + candidates,
            artifacts=[path.parent / name for name in ARTIFACTS],
            tags={"git_commit": run["git_commit"], "data_fingerprint": fold["fingerprint"],
                  **tracking.flatten_params({"evaluation": fold["evaluation"]})},
            uid=run["uid"], start_time=run["started_ms"], end_time=run["finished_ms"])
        print(f"fold {fold['fold']}: MLflow run {run_id}")
        folds.append({**fold, "mlflow_run_id": run_id})
        per_query.append(pd.read_csv(path.parent / "metrics.per_query.test.csv").assign(fold=fold["fold"]))
        timing.append(fold_timing(path.parent, selection))
    names = sorted(folds[0]["metrics"])
    values = {k: np.array([f["metrics"][k] for f in folds], dtype=float) for k in names}
    covered = [f["fold"] for f in folds]
    summary = {"dataset": w.dataset, "featureset": w.featureset, "method": w.method,
               "folds": covered, "fold_runs": {f["fold"]: f["mlflow_run_id"] for f in folds},
               "mean": {k: float(np.nanmean(v)) for k, v in values.items()},
               # a standard deviation over one fold is undefined (null), as in the tables
               "std": {k: float(np.nanstd(v, ddof=1)) if len(v) > 1 else None for k, v in values.items()},
               # mean over folds; null where the solver does not record it
               "timing": {k: None if np.isnan(v) else float(v)
                          for k, v in pd.DataFrame(timing).astype(float).mean().items()}}
    summary["mlflow_parent_run_id"] = tracking.log_parent_metrics(
        uri, experiment, dataset=w.dataset, featureset=w.featureset, method=w.method,
        metrics={**{f"mean.{k}": v for k, v in summary["mean"].items()},
                 **{f"std.{k}": v for k, v in summary["std"].items()}},
        tags={"folds": ",".join(map(str, covered))},
    )
    # every fold's test queries in one file: what the tables job reads
    atomic.write_csv(pd.concat(per_query, ignore_index=True), snakemake.output.per_query, float_format="%.17g")
    atomic.write_json(snakemake.output.summary, summary)
    print({k: round(v, 4) for k, v in summary["mean"].items() if k.startswith("test.")})
