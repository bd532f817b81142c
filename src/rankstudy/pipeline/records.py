"""The records one job hands to the next, typed: each is written and read only through its class
here, so a field has one name and one meaning, and a job reads what an upstream job recorded
directly (from a declared input) instead of having it relayed through files in between.

* :class:`ParsedFold` (``parsed.json``, parse_fold): a fold as parsed, before any cleaning;
* :class:`FoldMeta` (``meta.json``, clean_fold): the fold as a protocol cleaned it;
* :class:`FitRecord` (``fit.json``, train): the chosen hyper-parameters, where the training
  objective started and ended, when and from which commit and code the fold was trained;
* :class:`FoldSummary` (fold ``summary.json``, evaluate): mean metrics of vali and test, a random
  ranking's, and the verdict of the "did it learn" check;
* :class:`MethodSummary` (method ``summary.json``, aggregate): fold means, standard deviations,
  timing and the verdict per fold;
* :class:`MlflowPlan` (method ``mlflow.json``, aggregate): what the method's MLflow runs will
  hold, logged by the log_runs job with every other method of the (study, dataset) in one process.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, ClassVar

from rankstudy.util import atomic

SPLITS = ("train", "vali", "test")


class RecordError(ValueError):
    """A record file lacks a field (written by an older version, or not by rankstudy)."""


@dataclass
class Record:
    file: ClassVar[str] = ""

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict, source: str = "<dict>"):
        names = [f.name for f in dataclasses.fields(cls)]
        required = [f.name for f in dataclasses.fields(cls)
                    if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING]
        missing = [n for n in required if n not in data]
        if missing:
            raise RecordError(f"{source}: not a {cls.file or cls.__name__} of this rankstudy version (no "
                              f"{', '.join(missing)}); rerun the job that writes it (snakemake --forcerun)")
        return cls(**{n: data[n] for n in names if n in data})

    @classmethod
    def read(cls, path):
        return cls.from_dict(atomic.read_json(path), str(path))

    def write(self, path) -> None:
        atomic.write_json(path, self.to_dict())


def _sizes(splits: dict) -> dict[str, int]:
    """``{split}.n_queries`` and ``{split}.n_docs`` of every split."""
    out = {}
    for s in SPLITS:
        out[f"{s}.n_queries"] = int(splits[s].n_queries)
        out[f"{s}.n_docs"] = int(splits[s].offsets[-1])
    return out


@dataclass
class ParsedFold(Record):
    file: ClassVar[str] = "parsed.json"
    dataset: str
    fold: int
    max_label: float  # top grade of the label scale (for ERR)
    n_features: int
    fingerprint: str  # of the parsed splits' features, labels and query ids
    files: dict[str, str]  # split -> its file, relative to data_root (empty for generated data)
    sizes: dict[str, int]

    @classmethod
    def of(cls, dataset: str, fold_number: int, fold) -> "ParsedFold":
        return cls(dataset, int(fold_number), float(fold.max_label), int(fold.n_features), fold.fingerprint(),
                   dict(fold.files), _sizes(fold.splits))


@dataclass
class FoldMeta(Record):
    file: ClassVar[str] = "meta.json"
    dataset: str
    fold: int
    max_label: float
    n_features: int
    fingerprint: str  # of the cleaned splits
    files: dict[str, str]
    sizes: dict[str, int]
    cleaning: dict  # rule -> its splits; near_duplicates -> its options
    rel_threshold: float
    dropped: dict[str, int]  # what each cleaning step removed, per split

    @classmethod
    def of(cls, parsed: ParsedFold, fold, cleaning: dict, rel_threshold: float) -> "FoldMeta":
        return cls(parsed.dataset, parsed.fold, float(fold.max_label), int(fold.n_features), fold.fingerprint(),
                   dict(parsed.files), _sizes(fold.splits), {k: dict(v) if isinstance(v, dict) else list(v) for k, v in (cleaning or {}).items()},
                   float(rel_threshold), dict(fold.dropped))

    def to_dict(self) -> dict:
        out = super().to_dict()
        return {**out, **out["sizes"]}  # flat {split}.n_queries too, for readers of the file


@dataclass
class FitRecord(Record):
    file: ClassVar[str] = "fit.json"
    kind: str
    params: dict[str, Any]  # every parameter of the chosen candidate
    grid: dict[str, list]
    seed: int
    selection: dict[str, Any]  # selection_metric, rel_threshold, no_relevant
    uid: str  # names this training of the fold (its MLflow run)
    git_commit: str | None
    started_ms: int
    finished_ms: int
    # the training objective at the start and at the end ({"start", "final"}; lower is better),
    # None for rankers that report none
    objective: dict[str, float | None] | None = None
    selection_score: float | None = None  # the chosen candidate's validation score
    # a tuned method's budget and what it bought (rankstudy.selection.tuning.Outcome.summary): trials,
    # CPU-seconds, the best trial, the study; None for a grid
    tuning: dict[str, Any] | None = None
    # every candidate diverged (NaN or infinite scores or objective): why, in one line; the model is the
    # first candidate's, its scores taken as tied, and the fold is reported as not learned
    diverged: str | None = None
    # the package's code that trained it (rankstudy.tracking.provenance.code_digest); None from a
    # version that did not record it
    code_digest: str | None = None

    @property
    def seconds(self) -> float:
        return (self.finished_ms - self.started_ms) / 1000.0


@dataclass
class FoldSummary(Record):
    file: ClassVar[str] = "summary.json"
    study: str
    dataset: str
    featureset: str
    method: str
    fold: int
    metrics: dict[str, float]  # "{split}.{metric}": mean over the split's queries
    random: dict[str, float]  # the same for a uniformly random ranking (mean of seeded draws)
    learned: dict[str, Any]  # rankstudy.evaluation.learning.learning_check
    fingerprint: str
    n_queries: dict[str, int]  # vali, test
    # per split, how tied its scores are (rankstudy.evaluation.learning.score_ties): "flagged" when
    # most queries have every score tied, so the ranking is the input order; {} from older versions
    score_ties: dict[str, dict[str, Any]] = field(default_factory=dict)


@dataclass
class MethodSummary(Record):
    file: ClassVar[str] = "summary.json"
    study: str
    dataset: str
    featureset: str
    method: str
    folds: list[int]
    mean: dict[str, float]
    std: dict[str, float | None]  # None over one fold (undefined)
    timing: dict[str, float | None]
    learned: dict[int, dict[str, Any]]  # the check of each fold
    # per fold: the chosen grid values, what training settled (best_iteration, chosen_restart)
    # and the chosen candidate's validation score
    chosen: dict[int, dict[str, Any]] = field(default_factory=dict)
    # a random ranking's metrics on the same splits (mean of 10 seeded draws per fold): fold means
    random: dict[str, float] = field(default_factory=dict)
    # per fold, the fold summary's score_ties (of the vali and test scores)
    score_ties: dict[int, dict[str, dict[str, Any]]] = field(default_factory=dict)
    # per fold of a tuned method, the budget it ran with and what it spent (fit.json's tuning:
    # rankstudy.reporting.budget.FOLD_KEYS); {} for a grid and from older versions
    tuning: dict[int, dict[str, Any]] = field(default_factory=dict)

    @property
    def not_learned(self) -> dict[int, list[str]]:
        """The folds whose chosen model did not learn, with what the check found."""
        return {int(k): v["problems"] for k, v in self.learned.items() if not v["learned"]}


@dataclass
class MlflowPlan(Record):
    """One method's MLflow runs as the aggregate job computed them: ``folds`` holds the keyword
    arguments of each fold run (``tracking.runs.log_fold_run``), ``parent`` those of the parent
    (``log_parent_metrics``). Logging is the log_runs job's, one MLflow start-up per (study, dataset)
    instead of one per method: MLflow's import alone is about a second."""
    file: ClassVar[str] = "mlflow.json"
    study: str
    dataset: str
    featureset: str
    method: str
    folds: list[dict[str, Any]]
    parent: dict[str, Any]

    @property
    def identity(self) -> dict[str, str]:
        return {"study": self.study, "dataset": self.dataset, "featureset": self.featureset, "method": self.method}
