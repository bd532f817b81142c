"""Model selection on the validation split: fit one ranker per candidate (a grid's, or a tuning
trial's) on the training split, keep the one with the best validation metric (ties: the earlier
candidate). A candidate whose scores or objective go NaN or infinite is *diverged*: it is kept
in the candidates' table, marked so, and never selected; the fold keeps its other candidates."""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from rankstudy.data.rankdata import RankData
from rankstudy.evaluation import metrics
from rankstudy.rankers.base import Ranker
from rankstudy.rankers.registry import make_ranker
from rankstudy.selection.spec import grid_candidates
from rankstudy.util.intermediate import Pruned
from rankstudy.util.params import with_values

COMPLETE, DIVERGED, PRUNED = "complete", "diverged", "pruned"


class AllDiverged(RuntimeError):
    """Every candidate of a fold diverged: the message names the parameters to change. ``ranker``,
    ``params`` and ``rows`` are the first candidate's fitted (diverged) ranker, its parameters and
    the candidates' table with it selected, so the fold can still be saved and reported as not
    learned; None where no ranker was kept."""

    def __init__(self, message: str, ranker=None, params: dict | None = None, rows: list[dict] | None = None) -> None:
        super().__init__(message)
        self.ranker, self.params, self.rows = ranker, params, rows


@dataclass
class Candidate:
    """One fitted candidate: ``value`` is its validation metric (NaN when diverged)."""

    params: dict
    ranker: Ranker
    value: float
    seconds: float
    cpu_seconds: float  # the process's CPU time (every thread), what a tuning budget counts
    state: str = COMPLETE
    problem: str = ""


def _numeric_failure(exc: BaseException) -> bool:
    """Whether an exception is a computation that left the floats (not a bug to re-raise)."""
    if isinstance(exc, FloatingPointError | OverflowError):
        return True
    text = str(exc).lower()
    return isinstance(exc, ValueError) and any(w in text for w in ("nan", "inf", "finite", "overflow"))


def divergence(ranker: Ranker, scores: np.ndarray) -> str:
    """Why a fitted ranker counts as diverged ("" when it does not): non-finite validation scores,
    or a training objective that ended NaN or infinite."""
    bad = np.count_nonzero(~np.isfinite(scores))
    if bad:
        return f"{bad} of {len(scores)} validation scores are NaN or infinite"
    final = (ranker.objective_trace_ or {}).get("final")
    if final is not None and not math.isfinite(float(final)):
        return f"the training objective ended at {final}"
    return ""


def fit_candidate(kind: str, params: dict, train: RankData, vali: RankData, metric: str,
                  metric_options: dict | None = None) -> Candidate:
    """Fit ``params`` on ``train`` (``vali`` for early stopping) and score it on ``vali``."""
    start, cpu = time.perf_counter(), time.process_time()
    ranker, problem, value, state = None, "", float("nan"), COMPLETE
    try:
        ranker = make_ranker(kind, params)
        with np.errstate(over="ignore", invalid="ignore"):  # a diverging fit says so below, once
            ranker.fit(train, vali)
            scores = ranker.predict(vali)
        problem = divergence(ranker, scores)
        if not problem:
            value = metrics.mean_metrics(metrics.per_query(scores, vali.y, vali.offsets, [metric],
                                                           **(metric_options or {})))[metric]
    except Pruned as exc:  # tuning's pruner stopped it (rankstudy.selection.pruning)
        problem, state = str(exc), PRUNED
    except Exception as exc:
        if ranker is None or not _numeric_failure(exc):
            raise
        problem = f"{type(exc).__name__}: {exc}"
    if problem and state == COMPLETE:
        state = DIVERGED
    return Candidate(params, ranker, float(value), time.perf_counter() - start, time.process_time() - cpu,
                     state, problem)


def candidate_row(number: int, candidate: Candidate, shown: dict, metric: str) -> dict:
    """A row of the candidates' table (``selection.csv``)."""
    return {"candidate": number, **{f"param.{k}": v for k, v in shown.items()},
            f"vali.{metric}": candidate.value, "fit_seconds": round(candidate.seconds, 3),
            "cpu_seconds": round(candidate.cpu_seconds, 3), "state": candidate.state}


def diverged_message(kind: str, rows: list[dict], problems: list[str]) -> str:
    """One line for a fold whose every candidate diverged, naming the parameters tried."""
    tried = sorted({k[len("param."):] for row in rows for k in row if k.startswith("param.")})
    what = f" (the candidates' {', '.join(tried)})" if tried else ""
    return (f"every candidate of this {kind} fold diverged{what}: {problems[-1]}; try a smaller learning rate or "
            f"step, or a larger penalty")


def select_and_fit(kind: str, params: dict, grid: dict | None, train: RankData, vali: RankData, *,
                   metric: str = metrics.SELECTION_METRIC, metric_options: dict | None = None,
                   progress: Callable[[str], None] = print) -> tuple[Ranker, dict, list[dict]]:
    """Returns (best fitted ranker, its full parameters, one row per candidate: its number, its
    ``param.*`` values, ``vali.<metric>``, ``fit_seconds``, ``cpu_seconds``, ``state`` and
    whether it was ``selected``). :class:`AllDiverged` when every candidate diverged."""
    rows, best, last, problems, first = [], None, None, [], None
    candidates = grid_candidates(grid)
    for n, values in enumerate(candidates, 1):
        fitted = fit_candidate(kind, with_values(params, values), train, vali, metric, metric_options)
        rows.append(candidate_row(n, fitted, values, metric))
        if fitted.state == DIVERGED:
            problems.append(fitted.problem)
            first = first or fitted
            progress(f"candidate {n}/{len(candidates)} {values}: diverged ({fitted.problem}; {fitted.seconds:.1f} s)")
            continue
        progress(f"candidate {n}/{len(candidates)} {values}: vali {metric} = {fitted.value:.5f} "
                 f"({fitted.seconds:.1f} s)")
        last = (n - 1, fitted)
        if fitted.value > (best[1].value if best else -math.inf):  # ties: the earlier candidate
            best = last
    if best is None and last is None:
        for index, row in enumerate(rows):
            row["selected"] = index == 0
        raise AllDiverged(diverged_message(kind, rows, problems), first.ranker, first.params, rows)
    best = best or last  # every value NaN (e.g. no query with a relevant document in vali): the last
    for index, row in enumerate(rows):
        row["selected"] = index == best[0]
    return best[1].ranker, best[1].params, rows
