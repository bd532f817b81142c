"""Group-level rank functionals over label ties (Tran et al. 2011, Sec. 2, Table 2).

Within a query, the documents that share a relevance label form one mega-object
whose score aggregates its members' scores:

=========  ==========================================================
``min``    min_j f_j
``max``    max_j f_j
``mean``   (1/K) sum_j f_j                      (arithmetic mean)
``geomean`` log((1/K) sum_j exp f_j) = logsumexp(f) - log K   (Table 2's "geometric mean")
=========  ==========================================================

A query with ``|L|`` distinct labels becomes ``|L|`` groups, so any listwise loss
of :mod:`rankstudy.losses` can be applied to the groups instead of the documents
(e.g. Plackett-Luce / ListMLE over groups, the paper's Table 6): :func:`grouped_loss`
wraps a loss that way, keeping the ``loss(scores, labels, mask, **options)`` convention.
Grouping changes training only; at test time documents are still scored one by one.

Everything runs on the flat list of real entries sorted by (query, label descending):
each group is then a contiguous segment and every aggregate is one ``ufunc.reduceat``.
"""

from __future__ import annotations

from typing import Callable, NamedTuple

import numpy as np

GROUP_AGGREGATES = ("min", "max", "mean", "geomean")


def check_aggregate(agg: str) -> str:
    if agg not in GROUP_AGGREGATES:
        raise ValueError(f"unknown group aggregate {agg!r}; valid aggregates: {', '.join(GROUP_AGGREGATES)}")
    return agg


class GroupedScores(NamedTuple):
    """Padded ``(Q, G)`` group arrays (group ``g`` of a query = its ``g``-th highest label) and
    ``backward``, which maps a gradient on ``scores`` of shape ``(Q, G)`` to one on the
    documents' ``(Q, L)`` scores (zero at padding)."""

    scores: np.ndarray
    labels: np.ndarray
    mask: np.ndarray
    backward: Callable[[np.ndarray], np.ndarray]


def group_scores(scores: np.ndarray, labels: np.ndarray, mask: np.ndarray, agg: str) -> GroupedScores:
    """Aggregate each query's label-tie groups into one score (see the module table).

    ``backward`` shares a group's gradient among its members by d(aggregate)/d(member):
    ``mean`` in equal shares 1/K, ``geomean`` in softmax shares exp(f_j) / sum exp(f),
    ``min``/``max`` to the member attaining the extreme; members tied at the extreme SPLIT it
    equally (a subgradient that, unlike "first", does not depend on document order).
    Padded entries are never read (they may hold NaN).
    """
    check_aggregate(agg)
    mask = np.asarray(mask, dtype=bool)
    scores = np.asarray(scores, dtype=np.float64)
    labels = np.asarray(labels, dtype=np.float64)
    if scores.ndim != 2 or scores.shape != labels.shape or scores.shape != mask.shape:
        raise ValueError(f"scores, labels and mask must be 2-D arrays of one shape, got "
                         f"{scores.shape}, {labels.shape}, {mask.shape}")
    Q, L = mask.shape
    rows, cols = np.nonzero(mask)
    # by query, then label descending; lexsort is stable so tied members keep column order
    order = np.lexsort((-labels[rows, cols], rows))
    rows, cols = rows[order], cols[order]
    s, y = scores[rows, cols], labels[rows, cols]
    n = len(s)
    if n == 0:
        def backward_empty(grad: np.ndarray) -> np.ndarray:
            return np.zeros((Q, L))
        return GroupedScores(np.zeros((Q, 1)), np.zeros((Q, 1)), np.zeros((Q, 1), dtype=bool), backward_empty)

    is_start = np.ones(n, dtype=bool)
    is_start[1:] = (rows[1:] != rows[:-1]) | (y[1:] != y[:-1])
    starts = np.flatnonzero(is_start)
    counts = np.diff(np.append(starts, n))
    group_row = rows[starts]
    # rank of each group within its query: its segment number minus that of the query's first group
    group_rank = np.arange(len(starts)) - np.searchsorted(group_row, group_row, side="left")
    G = int(group_rank.max()) + 1
    group_cell = group_row * G + group_rank  # flat index into (Q, G)

    if agg == "mean":
        value = np.add.reduceat(s, starts) / counts
        share = np.repeat(1.0 / counts, counts)
    elif agg == "geomean":
        top = np.maximum.reduceat(s, starts)  # shift by the group max: exp never overflows
        e = np.exp(s - np.repeat(top, counts))
        total = np.add.reduceat(e, starts)
        value = top + np.log(total) - np.log(counts)
        share = e / np.repeat(total, counts)
    else:
        value = (np.minimum if agg == "min" else np.maximum).reduceat(s, starts)
        attains = s == np.repeat(value, counts)
        share = attains / np.repeat(np.add.reduceat(attains.astype(np.float64), starts), counts)

    gscores = np.zeros((Q, G))
    glabels = np.zeros((Q, G))
    gmask = np.zeros((Q, G), dtype=bool)
    gscores.flat[group_cell] = value
    glabels.flat[group_cell] = y[starts]
    gmask.flat[group_cell] = True
    member_cell = np.repeat(group_cell, counts)

    def backward(grad: np.ndarray) -> np.ndarray:
        grad = np.asarray(grad, dtype=np.float64)
        if grad.shape != (Q, G):
            raise ValueError(f"expected a gradient of shape {(Q, G)}, got {grad.shape}")
        out = np.zeros((Q, L))
        out[rows, cols] = grad.ravel()[member_cell] * share
        return out

    return GroupedScores(gscores, glabels, gmask, backward)


def grouped_loss(loss_fn: Callable, agg: str) -> Callable:
    """``loss_fn`` applied to the label-tie groups of each query (aggregated by ``agg``)
    instead of to its documents; same signature and conventions as ``loss_fn``, so the
    result can be used anywhere a loss is. Keyword options pass through to ``loss_fn``."""
    check_aggregate(agg)

    def loss(scores, labels, mask, **options):
        gscores, glabels, gmask, backward = group_scores(scores, labels, mask, agg)
        value, grad = loss_fn(gscores, glabels, gmask, **options)
        return value, backward(grad)

    inner = getattr(loss_fn, "__name__", None) or getattr(getattr(loss_fn, "func", None), "__name__", "loss")
    loss.__name__ = f"grouped_{agg}_{inner}"
    loss.__doc__ = f"{inner} over label-tie groups aggregated by {agg} (rankstudy.losses.groups.grouped_loss)."
    return loss
