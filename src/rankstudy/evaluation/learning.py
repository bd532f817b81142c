"""Did a trained model learn? A method that runs is not a method that works: a model can end where
it started (a solver that never left w = 0, a step too large for its constraint) and still write
scores, metrics and tables. Two checks catch that for every method and fold:

* its training objective must end below where it started (by ``OBJECTIVE_DROP``, relative),
  where the ranker reports one (``Ranker.objective_trace_``);
* its validation and test selection metric must beat a random ranking's by ``RANDOM_MARGIN``
  (absolute), the random ranking's being the mean over ``RANDOM_DRAWS`` seeded uniform scores.

The verdict goes into the fold's summary, the tables, the paper layouts and MLflow's tags.

A model that learned can still hand the test split scores that rank nothing: a test feature far
outside the training range (1e300) saturates every score to one value, and the metrics then
measure the file's order. :func:`score_ties` counts the queries whose scores are all tied; a
fold where they are more than ``MAX_TIED_SHARE`` of the queries is flagged (``report.max_tied_share``
sets the tables' threshold).
"""

from __future__ import annotations

import numpy as np

from rankstudy.evaluation import metrics

# the final objective must be at least 0.1% (of |start|) below the start. Not more: a listwise
# loss on long queries is mostly the entropy of its start (log 146 = 4.98 for ListNet on an
# OHSUMED query), so ListNet learns well on OHSUMED while its objective falls only 0.24%; a model
# stuck at its start (DORM's 0.97574 -> 0.97605, StructRank's 13024.4 -> 13024.0) falls < 0.01%
OBJECTIVE_DROP = 1e-3
RANDOM_MARGIN = 0.01  # and the selection metric this much above a random ranking's
RANDOM_DRAWS = 10
# more than this share of a split's queries (of two or more documents) with every score tied, and
# its scores are flagged: a model that ranks ties them rarely (a tree ensemble's few leaf values
# tie some documents of a query, not all of them in most queries)
MAX_TIED_SHARE = 0.5
# scores this close (relative, or absolute below 1) are one value: rounding noise orders nothing
_TIE_TOLERANCE = 1e-12


def random_metrics(data, names: list[str], draws: int = RANDOM_DRAWS, seed: int = 0, **options) -> dict[str, float]:
    """Mean metrics of uniformly random rankings of ``data``: the mean over ``draws`` seeded
    draws of i.i.d. uniform scores (ties have probability 0)."""
    rng = np.random.default_rng(seed)
    n = len(data.y)
    rows = [metrics.mean_metrics(metrics.per_query(rng.random(n), data.y, data.offsets, names, **options))
            for _ in range(draws)]
    return {name: float(np.nanmean([row[name] for row in rows])) for name in names}


def learning_check(objective: dict | None, metric: str, scores: dict[str, float],
                   random: dict[str, float]) -> dict:
    """The verdict: ``{"learned": bool, "problems": [...], "objective_drop": relative drop or
    None, "over_random": {split: metric - random}}``. ``scores`` and ``random`` hold
    ``"{split}.{metric}"`` for vali and test (NaN, e.g. no query with a relevant document, is
    not counted against the model)."""
    problems = []
    drop = None
    if objective and objective.get("start") is not None and objective.get("final") is not None:
        start, final = float(objective["start"]), float(objective["final"])
        drop = (start - final) / abs(start) if start else (0.0 if final >= 0 else 1.0)
        if not drop >= OBJECTIVE_DROP:
            problems.append(f"training objective {start:.6g} -> {final:.6g} "
                            f"({'rose' if final > start else 'fell only ' + format(drop, '.2%')}): "
                            f"not clearly below its start")
    over = {}
    for split in ("vali", "test"):
        key = f"{split}.{metric}"
        if key not in scores or key not in random or np.isnan(scores[key]) or np.isnan(random[key]):
            continue
        over[split] = float(scores[key] - random[key])
        if not over[split] > RANDOM_MARGIN:
            problems.append(f"{split} {metric} {scores[key]:.4f} vs a random ranking's {random[key]:.4f}: "
                            f"no better than random")
    return {"learned": not problems, "problems": problems, "objective_drop": drop, "over_random": over}


def score_ties(scores, offsets, max_tied_share: float = MAX_TIED_SHARE) -> dict:
    """How tied the scores of a split are: ``queries`` of two or more documents, how many of
    them have every score tied (``all_tied``, and as a share ``all_tied_share``), the mean share
    of distinct values within a query (``distinct_share``: 1 when no two scores tie), the distinct
    values over the split (``distinct_values``), and ``flagged`` when ``all_tied_share`` exceeds
    ``max_tied_share``. Scores within ``_TIE_TOLERANCE`` (relative) of each other count as one."""
    scores = np.asarray(scores, dtype=np.float64)
    offsets = np.asarray(offsets, dtype=np.int64)
    sizes = np.diff(offsets)
    query = np.repeat(np.arange(len(sizes)), sizes)
    order = np.lexsort((scores, query))  # by query, then score: a query's ties are neighbours
    s, q = scores[order], query[order]
    with np.errstate(invalid="ignore"):  # inf - inf: equal infinities are caught by ==
        same = (s[1:] == s[:-1]) | (np.abs(s[1:] - s[:-1]) <= _TIE_TOLERANCE * np.maximum(1.0, np.abs(s[1:])))
    new_value = np.ones(len(s), dtype=bool)
    new_value[1:] = ~same | (q[1:] != q[:-1])
    distinct = np.bincount(q, weights=new_value, minlength=len(sizes))
    several = sizes >= 2
    all_tied = several & (distinct == 1)
    n = int(several.sum())
    share = float(all_tied.sum() / n) if n else 0.0
    return {"queries": n, "all_tied": int(all_tied.sum()), "all_tied_share": share,
            "distinct_share": float(np.mean(distinct[several] / sizes[several])) if n else 1.0,
            "distinct_values": int(len(np.unique(s))), "flagged": bool(share > max_tied_share)}
