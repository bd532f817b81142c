"""Where every file of a run lives: the one owner of ``results/``.

Rules take their paths from here (as templates with Snakemake wildcards), scripts get theirs
from Snakemake (declared inputs and outputs), tests and tools fill the same templates; no path
is rebuilt by hand or parsed back anywhere else. ::

    results/
      data/{data}/source.json                                  the data set as fetched or generated
      data/{data}/fold{fold}/{split}.npz, parsed.json           its parsed splits, shared by every protocol
      data/{data}/{cleaning}/fold{fold}/{split}.npz, meta.json  the splits cleaned as a protocol says
      features/{data}/{cleaning}/{norm}/fold{fold}/pair_correlations.tsv
      features/{data}/{cleaning}/{norm}/{featureset}/fold{fold}/{split}.npz, pairs.tsv, transform.json
      runs/{study}/{dataset}/{featureset}/{method}/fold{fold}/  one study's training and evaluation of a fold
      runs/{study}/{dataset}/{featureset}/{method}/             its fold means, per-query test metrics, MLflow plan
      tuning/{study}/{dataset}/{featureset}/{method}/fold{fold}.journal  a tuned method's Optuna study
      runs/{study}/{dataset}/mlflow.runs.json                  the MLflow runs log_runs wrote for it
      runs/{study}/{dataset}/complete.json                     a study a scorecard run ran to its end
      tables/{study}/{dataset}.*, plots/{study}/{dataset}.*
      tables/{study}/leaderboard.*, plots/{study}/leaderboard.png  the study's leaderboard over its data sets
      report/{study}/{dataset}.*.html                          the tables as pages of `snakemake --report`
      tables/scorecard.*                                        the reproduction scorecard over studies
      logs/{rule}/..., benchmarks/{rule}/...                    each job's, named as its outputs are
      mlflow.db, mlartifacts/                                   the default MLflow store

Why these names: data and features depend only on the data set and the protocol (cleaning,
normalisation), so two studies that share them share the work, and two that differ write to
different folders; training and evaluation belong to a study (its methods, grids, selection
and metrics), so two studies never overwrite each other's runs. The names:

* ``data``: the data set's name; for a generated one (``synthetic``, ``synthetic_qa``) its name
  and a digest of its generator settings and seed (``synthetic.3f2a91c0``), since those settings
  are its content;
* ``cleaning``: ``raw`` (no cleaning) or ``clean-`` and a digest of the cleaning rules and the
  relevance threshold they use; ``meta.json`` in each fold says what was dropped;
* ``norm``: the normalisation (``zscore``, ``querylevel``, ``none``), with ``-float32`` when the
  features are stored as float32.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path

from rankstudy.data.folds import NEAR_DUPLICATES
from rankstudy.data.sources import generator_settings
from rankstudy.data.splitfiles import SPLITS

RESULTS = "results"

# data and features: shared by every study with the same protocol
SOURCE = f"{RESULTS}/data/{{data}}/source.json"
PARSED_DIR = f"{RESULTS}/data/{{data}}/fold{{fold}}"
PARSED = f"{PARSED_DIR}/{{split}}.npz"
PARSED_META = f"{PARSED_DIR}/parsed.json"
CLEANED_DIR = f"{RESULTS}/data/{{data}}/{{cleaning}}/fold{{fold}}"
CLEANED = f"{CLEANED_DIR}/{{split}}.npz"
FOLD_META = f"{CLEANED_DIR}/meta.json"
CORRELATIONS = f"{RESULTS}/features/{{data}}/{{cleaning}}/{{norm}}/fold{{fold}}/pair_correlations.tsv"
FEATURES_DIR = f"{RESULTS}/features/{{data}}/{{cleaning}}/{{norm}}/{{featureset}}/fold{{fold}}"
FEATURES = f"{FEATURES_DIR}/{{split}}.npz"
PAIRS = f"{FEATURES_DIR}/pairs.tsv"
TRANSFORM = f"{FEATURES_DIR}/transform.json"

# one study's runs
METHOD_DIR = f"{RESULTS}/runs/{{study}}/{{dataset}}/{{featureset}}/{{method}}"
FOLD_DIR = f"{METHOD_DIR}/fold{{fold}}"
# what the train job writes, then the evaluate job, in each fold's folder
TRAIN_OUTPUTS = {"model": "model.json", "history": "history.json", "selection": "selection.csv", "fit": "fit.json"}
EVALUATE_OUTPUTS = {"scores_vali": "scores.vali.tsv", "scores_test": "scores.test.tsv", "trec": "run.test.trec",
                    "qrels": "qrels.test.txt",
                    "per_query_vali": "metrics.per_query.vali.csv", "per_query_test": "metrics.per_query.test.csv",
                    "resolved": "config.resolved.json", "summary": "summary.json"}
# a tuned method's trials: each tuning worker's record, and the Optuna study (a journal file, when
# tune.storage names no database) kept apart from the fold's outputs so a rerun resumes from it
TUNE_WORKER = f"{FOLD_DIR}/tuning/worker{{worker}}.json"
TUNING_JOURNAL = f"{RESULTS}/tuning/{{study}}/{{dataset}}/{{featureset}}/{{method}}/fold{{fold}}.journal"
METHOD_SUMMARY = f"{METHOD_DIR}/summary.json"
METHOD_PER_QUERY = f"{METHOD_DIR}/metrics.per_query.test.csv"
METHOD_MLFLOW = f"{METHOD_DIR}/mlflow.json"  # its MLflow runs, for the log_runs job to log
# the MLflow run ids the log_runs job logged for a study and data set (fold, parent and study runs)
RUNS_LOGGED = f"{RESULTS}/runs/{{study}}/{{dataset}}/mlflow.runs.json"

TABLES = f"{RESULTS}/tables/{{study}}/{{dataset}}"
# a scorecard run (config key scorecard): each member study run to its end, then the card over them
STUDY_COMPLETE = f"{RESULTS}/runs/{{study}}/{{dataset}}/complete.json"
SCORECARD = f"{RESULTS}/tables/scorecard"  # .md, .csv, .html, .conventions.csv, .beyond.csv
# a protocol-forensics variant of a study: the config its run_study job runs (pipeline.forensics)
STUDY_CONFIG = f"{RESULTS}/runs/{{study}}/study.config.yaml"
FORENSICS = f"{RESULTS}/tables/forensics"  # .md, .csv (every variant's value per cell), .cells.csv, .html, .png
PLOTS = f"{RESULTS}/plots/{{study}}/{{dataset}}"
# a study's leaderboard over its data sets (report.leaderboard): .md, .html, .csv, and its heat map
LEADERBOARD = f"{RESULTS}/tables/{{study}}/leaderboard"
LEADERBOARD_PLOT = f"{RESULTS}/plots/{{study}}/leaderboard.png"
# each table file as an HTML page the Snakemake report can show (.csv.html, .md.html, ...)
REPORT_PAGES = f"{RESULTS}/report/{{study}}/{{dataset}}"

# each job's log and benchmark, keyed by the same wildcards as its outputs
JOB_KEYS = {
    "fetch_dataset": "{data}",
    "parse_fold": "{data}/fold{fold}",
    "clean_fold": "{data}/{cleaning}/fold{fold}",
    "pair_correlations": "{data}/{cleaning}/{norm}/fold{fold}",
    "featurize": "{data}/{cleaning}/{norm}/{featureset}/fold{fold}",
    "train": "{study}/{dataset}/{featureset}/{method}/fold{fold}",
    "tune_trials": "{study}/{dataset}/{featureset}/{method}/fold{fold}/worker{worker}",
    "evaluate": "{study}/{dataset}/{featureset}/{method}/fold{fold}",
    "aggregate": "{study}/{dataset}/{featureset}/{method}",
    "scorecard": "scorecard",
    "forensics": "forensics",
    "leaderboard": "{study}",
}
STUDY_JOB_KEY = "{study}/{dataset}"  # tables, paper_table, sweep_plot, delta_smear, run_study


def log(rule: str) -> str:
    return f"{RESULTS}/logs/{rule}/{JOB_KEYS.get(rule, STUDY_JOB_KEY)}.log"


def benchmark(rule: str) -> str:
    return f"{RESULTS}/benchmarks/{rule}/{JOB_KEYS.get(rule, STUDY_JOB_KEY)}.tsv"


def job_wildcards(rule: str, key: str) -> dict[str, str] | None:
    """The wildcards of a job from its log's or benchmark's name under ``{rule}/`` (without the
    suffix), e.g. for tools that read every benchmark file of a run; None if it does not match."""
    template = JOB_KEYS.get(rule, STUDY_JOB_KEY)
    pattern = re.sub(r"\\\{(\w+)\\\}", lambda m: f"(?P<{m.group(1)}>[^/]+)", re.escape(template))
    found = re.fullmatch(pattern, key)
    return found.groupdict() if found else None


def in_dir(folder: str, names: dict[str, str]) -> dict[str, str]:
    """``{key: folder/name}``: a rule's named outputs in one folder."""
    return {key: f"{folder}/{name}" for key, name in names.items()}


def _digest(value) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, default=str).encode()).hexdigest()[:8]


def data_name(dataset: str, entry: dict, config: dict) -> str:
    """The data set's folder name (see the module docstring)."""
    settings = generator_settings(entry, config)
    return dataset if settings is None else f"{dataset}.{_digest(settings)}"


def cleaning_rules(cleaning: dict | None) -> dict:
    """The cleaning section with one spelling per setting: what the clean job gets as its params
    (Snakemake compares params as text) and what the cleaning name digests. Each rule's splits in
    split order, once; a rule with no splits the same as one left out; ``near_duplicates`` only
    with ``chakrabarti`` splits, and only its options that differ from their defaults. The
    spelling is config/config.yaml's, so its runs keep their params: ``drop_no_relevant`` and
    ``chakrabarti`` always named, ``binarize`` only when it has splits."""
    cleaning = cleaning or {}

    def splits(rule: str) -> list[str]:
        return [s for s in SPLITS if s in (cleaning.get(rule) or [])]

    rules = {"drop_no_relevant": splits("drop_no_relevant"), "chakrabarti": splits("chakrabarti")}
    if splits("binarize"):
        rules["binarize"] = splits("binarize")
    options = {k: v for k, v in sorted((cleaning.get("near_duplicates") or {}).items())
               if not (k in NEAR_DUPLICATES and v == NEAR_DUPLICATES[k] and type(v) is type(NEAR_DUPLICATES[k]))}
    if options and rules["chakrabarti"]:
        rules["near_duplicates"] = options
    return rules


def cleaning_name(cleaning: dict | None, rel_threshold: float) -> str:
    """``raw``, or ``clean-<digest>`` of the rules in use and the relevance threshold they apply."""
    rules = cleaning_rules(cleaning)
    options = rules.pop("near_duplicates", None)
    rules = {key: sorted(splits) for key, splits in rules.items() if splits}
    if not rules:
        return "raw"
    if options:  # only options given, away from their defaults: older folders keep their names
        rules["near_duplicates"] = options
    return f"clean-{_digest({'rules': rules, 'rel_threshold': float(rel_threshold)})}"


def norm_name(features: dict) -> str:
    dtype = features.get("dtype", "float64")
    return features["normalization"] + ("" if dtype == "float64" else f"-{dtype}")


@dataclass(frozen=True)
class Protocol:
    """What shapes the data of one data set in a run: its folder, cleaning and normalisation."""

    data: str
    cleaning: str
    norm: str

    def keys(self) -> dict[str, str]:
        return {"data": self.data, "cleaning": self.cleaning, "norm": self.norm}


def protocol(dataset: str, entry: dict, config: dict) -> Protocol:
    return Protocol(data_name(dataset, entry, config),
                    cleaning_name(config.get("cleaning"), config["evaluation"]["rel_threshold"]),
                    norm_name(config["features"]))


# a name that becomes one folder or file name under results/: no separator, no '.' or '..'
PATH_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.+-]*")


def path_name_problem(name: object) -> str | None:
    """Why ``name`` (a study, data set, method or feature set) cannot be one component of a path
    under results/, or None: it must be a plain name (letters, digits, ``_ . + -``, not starting
    with a dot), so that ``study: ..`` cannot write the study's outputs into results/ itself."""
    if isinstance(name, str) and PATH_NAME.fullmatch(name):
        return None
    return (f"{name!r} cannot name a folder under results/: use letters, digits and _ . + - "
            f"(not starting with a dot, no '/')")


def fill(template: str, **keys) -> str:
    """A template with its wildcards filled (every one must be given)."""
    return template.format(**keys)


def system_label(method: str, featureset: str) -> str:
    """How tables, plots and MLflow name one (method, feature set)."""
    return f"{method} [{featureset}]"


def split_system_label(system: str) -> tuple[str, str]:
    """(method, feature set) of a :func:`system_label`, e.g. as a paper spec or a claims file names it."""
    method, _, rest = system.rpartition(" [")
    if not method or not rest.endswith("]"):
        raise ValueError(f"system {system!r} is not 'method [featureset]'")
    return method, rest[:-1]


def study_paths(study: str, dataset: str, prot: Protocol, featureset: str, method: str,
                fold: int | None = None) -> dict[str, Path]:
    """The files of one (study, data set, feature set, method) and, with ``fold``, of that
    fold, by name: for tests and tools that read a finished run."""
    keys = dict(study=study, dataset=dataset, featureset=featureset, method=method, **prot.keys())
    out = {"summary": Path(fill(METHOD_SUMMARY, **keys)), "per_query": Path(fill(METHOD_PER_QUERY, **keys))}
    if fold is not None:
        folder = fill(FOLD_DIR, fold=fold, **keys)
        out.update({k: Path(v) for k, v in in_dir(folder, {**TRAIN_OUTPUTS, **EVALUATE_OUTPUTS}).items()})
        out["features_dir"] = Path(fill(FEATURES_DIR, fold=fold, **keys))
        out["meta"] = Path(fill(FOLD_META, fold=fold, **keys))
    return out
