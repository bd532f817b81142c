# Shared helpers: config checks that need the package, wildcard constraints, target lists.
import json
import os
import re
from pathlib import Path

# Parallel jobs each get one core: stop BLAS from oversubscribing it with its own threads.
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

from rankstudy.config import check_config, git_commit, run_methods

SETTINGS = check_config(config, workdir=Path(workflow.basedir))
FEATURESETS = SETTINGS.featuresets
METHODS = run_methods(config)
DATASETS = list(config["datasets"])
FOLDS = [int(f) for f in config["folds"]]
SPLITS = ["train", "vali", "test"]
# The jobs' software: this environment (used with `--sdm conda`; otherwise the current one).
ENV = "../../environment.yml"
# Default MLflow store beside the outputs; MLFLOW_TRACKING_URI still wins inside the jobs.
MLFLOW = {
    "tracking_uri": (config.get("mlflow") or {}).get("tracking_uri")
    or f"sqlite:///{Path('results').resolve()}/mlflow.db",
    "experiment": (config.get("mlflow") or {}).get("experiment", "rankstudy"),
}


wildcard_constraints:
    dataset="[A-Za-z0-9_-]+",
    featureset="|".join(map(re.escape, FEATURESETS)) if FEATURESETS else "[^/]+",
    method="|".join(map(re.escape, METHODS)),
    fold=r"\d+",
    split="train|vali|test",
    study="[A-Za-z0-9_.-]+",


def correlations_if_needed(w):
    """Only second-order feature sets need the pair correlations of their fold."""
    if w.featureset == "first":
        return []
    return [f"results/features/{w.dataset}/fold{w.fold}/pair_correlations.tsv"]


def fold_summaries(w):
    return expand(
        "results/runs/{dataset}/{featureset}/{method}/fold{fold}/summary.json",
        dataset=w.dataset, featureset=w.featureset, method=w.method, fold=FOLDS,
    )


def dataset_summaries(w):
    return expand(
        "results/runs/{dataset}/{featureset}/{method}/summary.json",
        dataset=w.dataset, featureset=FEATURESETS, method=METHODS,
    )


def dataset_per_query(w):
    return expand(
        "results/runs/{dataset}/{featureset}/{method}/fold{fold}/metrics.per_query.test.csv",
        dataset=w.dataset, featureset=FEATURESETS, method=METHODS, fold=FOLDS,
    )


def dataset_transforms(w):
    return expand(
        "results/features/{dataset}/{featureset}/fold{fold}/transform.json",
        dataset=w.dataset, featureset=FEATURESETS, fold=FOLDS,
    )


def all_targets():
    targets = [
        "results/tables/{study}/{dataset}.md",
        "results/plots/{study}/{dataset}.ndcg_at_k.png",
    ]
    if config.get("paper"):
        targets.append("results/tables/{study}/{dataset}.paper.md")
    return expand(targets, study=config["study"], dataset=DATASETS)
