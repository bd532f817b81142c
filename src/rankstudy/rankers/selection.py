"""Model selection on the validation split: fit one ranker per grid candidate on the
training split, keep the one with the best validation metric (ties: the earlier candidate)."""

from __future__ import annotations

import time
from collections.abc import Callable

from rankstudy.evaluation import metrics
from rankstudy.data.rankdata import RankData
from rankstudy.rankers.base import Ranker
from rankstudy.rankers.registry import make_ranker
from rankstudy.rankers.spec import grid_candidates


def select_and_fit(kind: str, params: dict, grid: dict | None, train: RankData, vali: RankData, *,
                   metric: str = "ndcg@10", metric_options: dict | None = None,
                   progress: Callable[[str], None] = print) -> tuple[Ranker, dict, list[dict]]:
    """Returns (best fitted ranker, its full parameters, one row per candidate: its number, its
    ``param.*`` values, ``vali.<metric>``, ``fit_seconds`` and whether it was ``selected``)."""
    metric_options = metric_options or {}
    rows, best, best_value, best_index = [], None, -float("inf"), 0
    candidates = grid_candidates(grid)
    for n, candidate in enumerate(candidates, 1):
        full = {**params, **candidate}
        start = time.perf_counter()
        ranker = make_ranker(kind, full).fit(train, vali)
        seconds = time.perf_counter() - start
        value = metrics.mean_metrics(
            metrics.per_query(ranker.predict(vali), vali.y, vali.offsets, [metric], **metric_options))[metric]
        rows.append({"candidate": n, **{f"param.{k}": v for k, v in candidate.items()},
                     f"vali.{metric}": value, "fit_seconds": round(seconds, 3)})
        progress(f"candidate {n}/{len(candidates)} {candidate}: vali {metric} = {value:.5f} ({seconds:.1f} s)")
        if value > best_value:
            best, best_value, best_params, best_index = ranker, value, full, n - 1
    if best is None:  # every candidate gave NaN (e.g. no query with a relevant document in vali)
        best, best_params, best_index = ranker, full, len(rows) - 1
    for index, row in enumerate(rows):
        row["selected"] = index == best_index
    return best, best_params, rows
