# Shared helpers: config checks that need the package, wildcard constraints, target lists.
import json
import re
from pathlib import Path

from rankstudy.pipeline.config import check_config, run_methods
from rankstudy.rankers.registry import ranker_class

SETTINGS = check_config(config, workdir=Path(workflow.basedir))
FEATURESETS = SETTINGS.featuresets  # name -> FeatureSet
METHODS = run_methods(config)
DATASETS = list(config["datasets"])
FOLDS = [int(f) for f in config["folds"]]
SPLITS = ["train", "vali", "test"]
# The jobs' software: this environment (used with `--sdm conda`; otherwise the current one).
ENV = "../../environment.yml"
# What model selection needs: changing a report metric must not retrain.
SELECTION = {
    "metric": config["evaluation"].get("selection_metric", "ndcg@10"),
    "rel_threshold": config["evaluation"].get("rel_threshold", 1),
    "no_relevant": config["evaluation"].get("no_relevant", "zero"),
}
# Default MLflow store beside the outputs; MLFLOW_TRACKING_URI still wins inside the jobs.
MLFLOW = {
    "tracking_uri": (config.get("mlflow") or {}).get("tracking_uri")
    or f"sqlite:///{Path('results').resolve()}/mlflow.db",
    "experiment": (config.get("mlflow") or {}).get("experiment", "rankstudy"),
}


# What one job asks a scheduler for (SLURM through workflow/profiles/slurm; locally only `threads`
# counts, and mem_mb when --resources mem_mb=N is given). A job's BLAS, OpenMP and LightGBM use
# exactly its `threads` (rankstudy.util.threads, set as the job starts), so single-threaded jobs
# side by side do not oversubscribe the cores.
# Sized from measurements (README, "On a SLURM cluster"): a whole SLURM job peaked at 430-730 MB
# (about 420 MB of it Snakemake: the jobstep and the job's own process; the script 110-330 MB,
# growing by at most 1.5 MB per MB of input), and the longest script took 25 s. mem_mb and
# runtime (minutes) double on the second attempt (--retries) and triple on the third, so a job
# killed for memory or time asks for more.
def job_mem_mb(base=1000, per_input_mb=0.0):
    def mem_mb(wildcards, input, attempt):
        return int(base + per_input_mb * input.size_mb) * attempt

    return mem_mb


def job_runtime(base=10, per_input_mb=0.0):
    def runtime(wildcards, input, attempt):
        return int(base + per_input_mb * input.size_mb) * attempt

    return runtime


# A fold's parsed splits are as large as one feature set; at MSLR-WEB30K size users may let
# Snakemake delete them once every feature set is built (features.keep_prepared: false).
def prepared_split(path):
    return path if config["features"].get("keep_prepared", True) else temp(path)


# Threads of a method's train job: its `threads` entry, else PARALLEL_THREADS for rankers whose
# fit uses threads (LightGBM), 1 for the rest (they gain more from running side by side).
# Snakemake scales a job's threads down to --cores.
PARALLEL_THREADS = 4


def train_threads(wildcards):
    spec = config["methods"][wildcards.method]
    return spec.get("threads") or (PARALLEL_THREADS if ranker_class(spec["kind"]).parallel else 1)


def training_spec(wildcards):
    """What changes training: the method's entry without its thread count."""
    return {k: v for k, v in config["methods"][wildcards.method].items() if k != "threads"}


wildcard_constraints:
    dataset="[A-Za-z0-9_-]+",
    featureset="|".join(map(re.escape, FEATURESETS)),
    method="|".join(map(re.escape, METHODS)),
    fold=r"\d+",
    split="train|vali|test",
    study="[A-Za-z0-9_.-]+",


def correlations_if_needed(w):
    """Only second-order feature sets need the pair correlations of their fold."""
    if not FEATURESETS[w.featureset].second_order:
        return []
    return [f"results/features/{w.dataset}/fold{w.fold}/pair_correlations.tsv"]


def fold_summaries(w):
    return expand(
        "results/runs/{dataset}/{featureset}/{method}/fold{fold}/summary.json",
        dataset=w.dataset, featureset=w.featureset, method=w.method, fold=FOLDS,
    )


def dataset_per_query(w):
    """Test metrics per query of every (feature set, method), all folds in one file each."""
    return expand(
        "results/runs/{dataset}/{featureset}/{method}/metrics.per_query.test.csv",
        dataset=w.dataset, featureset=FEATURESETS, method=METHODS,
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
    if config["report"].get("sweep"):
        targets.append("results/plots/{study}/{dataset}.sweep.png")
    if config["report"].get("delta_smear"):
        targets.append("results/plots/{study}/{dataset}.delta_smear.png")
    return expand(targets, study=config["study"], dataset=DATASETS)
