# Shared helpers: config checks that need the package, wildcard constraints, target lists.
import json
import re
from pathlib import Path

from rankstudy.config import check_config, git_commit

RESULTS = "results"
SETTINGS = check_config(config, workdir=Path(workflow.basedir))
FEATURESETS = SETTINGS.featuresets
METHODS = list(config["methods"])
DATASETS = list(config["datasets"])
FOLDS = [int(f) for f in config["folds"]]
SPLITS = ["train", "vali", "test"]


wildcard_constraints:
    dataset="[A-Za-z0-9_.-]+",
    featureset="|".join(map(re.escape, FEATURESETS)) if FEATURESETS else "[^/]+",
    method="|".join(map(re.escape, METHODS)),
    fold=r"\d+",
    split="train|vali|test",
    study="[A-Za-z0-9_.-]+",


def run_dir(w):
    return f"{RESULTS}/runs/{w.dataset}/{w.featureset}/{w.method}/fold{w.fold}"


def fold_summaries(w):
    return expand(
        RESULTS + "/runs/{dataset}/{featureset}/{method}/fold{fold}/summary.json",
        dataset=w.dataset, featureset=w.featureset, method=w.method, fold=FOLDS,
    )


def dataset_summaries(w):
    return expand(
        RESULTS + "/runs/{dataset}/{featureset}/{method}/summary.json",
        dataset=w.dataset, featureset=FEATURESETS, method=METHODS,
    )


def dataset_per_query(w):
    return expand(
        RESULTS + "/runs/{dataset}/{featureset}/{method}/fold{fold}/metrics.per_query.test.csv",
        dataset=w.dataset, featureset=FEATURESETS, method=METHODS, fold=FOLDS,
    )


def all_targets():
    study = config["study"]
    return expand(
        [
            RESULTS + "/tables/{study}/{dataset}.md",
            RESULTS + "/plots/{study}/{dataset}.ndcg_at_k.png",
        ],
        study=study, dataset=DATASETS,
    )
