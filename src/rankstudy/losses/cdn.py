"""Cumulative distribution networks over pairwise preferences (Huang and Frey, NIPS 2008).

A query's order graph has an edge e = (i -> j) for every pair of documents with y_i > y_j, and
one preference variable per edge, observed below r_e = s_i - s_j. A CDN writes the joint CDF
of those variables as a product of CDN functions over cliques of edges; the loss of a query is
-log F = sum over cliques c of m_c log(1 + sum_{e in c} exp(-w_e r_e)), i.e. every CDN function
is a multivariate sigmoid (Eq. 9; a valid CDF for weights w_e >= 0). One numpy code path,
:func:`clique_terms`, evaluates the cliques of every topology (the full one also compiled):

* ``full``: a bivariate sigmoid phi(r_e, r_e') = 1/(1 + exp(-w1 r_e) + exp(-w2 r_e')) for every
  ordered pair of distinct edges (Eq. 8): E (E - 1) cliques for E edges, so it costs O(E^2)
  time per query. ``backend="numba"`` (the default) evaluates it compiled, with the job's
  threads, at about one ``np.log1p`` per clique (:mod:`rankstudy.losses.cdn_numba`; memory
  O(E threads)); ``backend="numpy"``, the reference, in blocks of rows of at most
  ``block_elements`` pairs (memory O(block_elements + E)), about 100 times slower;
* ``random``: each edge paired with ``degree`` other edges drawn at random (seeded) in each of
  ``n_topologies`` random CDNs, whose losses are averaged: O(E degree n_topologies);
* ``disconnected``: every edge its own univariate sigmoid 1/(1 + exp(-w1 r_e)): O(E); with
  w1 = 1 this is RankNet.

The same clique evaluation expresses ListMLE (one clique per position of the label order, over
the edges to every later document) and ListNet (one clique per document over the edges to all
others, weighted by the target top-one probability): :func:`listmle_cdn`, :func:`listnet_cdn`.

Value: per query the SUM over its cliques (``reduction="sum"``, the paper's -log F) or their
MEAN (``reduction="mean"``: -log F divided by the query's number of CDN functions, E (E - 1),
E degree or E); then the mean over the queries that have at least one edge, as the other
losses (:mod:`rankstudy.losses`). ``cdn_with_weights`` also returns the gradient with respect to
(w1, w2), which StructRank learns.

Why a mean (StructRank's default, :mod:`rankstudy.rankers.structrank`): the paper trains on the
sum (Eq. 10), whose size grows like E^2 for the full CDN and like E for the others. On OHSUMED
(about 5,900 edges per training query, 4.5e9 cliques in fold 1's 62 queries) a query's gradient
at the start had a median L1 norm of 25 (disconnected) and 9e4 (full; up to 4.8e6), against
0.009 for the mean of any topology, for parameters in [0, 1]: the paper's step 0.5 throws them
out of the L1 ball (see :mod:`rankstudy.solvers.projected_sgd`). A query's mean has the
minimisers of its sum, its size does not depend on E, and one step suits every topology and
query length; it weights the queries equally instead of by E or E^2.
"""

from __future__ import annotations

import numpy as np

from rankstudy.losses.padded import (
    PAIR_BLOCK_ELEMENTS,
    clean,
    masked_log_softmax,
    plackett_luce_order,
    query_weights,
)

TOPOLOGIES = ("full", "random", "disconnected")
REDUCTIONS = ("sum", "mean")
BACKENDS = ("numba", "numpy")  # of the full topology; numpy is the reference


def clique_terms(u: np.ndarray, present: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For cliques along the last axis: log(1 + sum_k exp(u_k)) over the present entries, and
    its gradient exp(u_k) / (1 + sum exp(u)) (0 where absent). Shifted by max(0, max u), so
    it never overflows."""
    top = np.maximum(np.where(present, u, -np.inf).max(axis=-1, initial=-np.inf), 0.0)
    e = np.where(present, np.exp(np.where(present, u, 0.0) - top[..., None]), 0.0)
    total = np.exp(-top) + e.sum(axis=-1)
    return top + np.log(total), e / total[..., None]


def order_edges(y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Edges i -> j (y_i > y_j) among one query's documents, heads and tails, in (i, j) order."""
    heads, tails = np.nonzero(y[:, None] > y[None, :])
    return heads, tails


def n_cliques(E: int, topology: str, degree: int) -> int:
    """How many CDN functions a query with E edges has (per random CDN for ``random``)."""
    if topology == "full":
        return E * (E - 1)
    if topology == "random":
        return E * int(degree) if E >= 2 else 0
    return E


def _query_loss(r: np.ndarray, topology: str, w1: float, w2: float, degree: int, n_topologies: int,
                rng: np.random.Generator | None, block_elements: int, backend: str = "numpy"):
    """-log F of one query's edges: (value, d/dr, d/dw1, d/dw2)."""
    E = len(r)
    if topology == "full" and backend == "numba":
        from rankstudy.losses.cdn_numba import full_cdn_query

        return full_cdn_query(r, w1, w2)
    if topology == "disconnected":
        value, p = clique_terms((-w1 * r)[:, None], np.ones((E, 1), dtype=bool))
        p = p[:, 0]
        return value.sum(), -w1 * p, float(-(r * p).sum()), 0.0
    grad_r = np.zeros(E)
    value = gw1 = gw2 = 0.0
    if topology == "full":
        rows_per_block = max(1, int(block_elements) // max(1, E))
        columns = np.arange(E)
        for first in range(0, E, rows_per_block):
            rows = np.arange(first, min(E, first + rows_per_block))
            u = np.stack(np.broadcast_arrays(-w1 * r[rows][:, None], -w2 * r[None, :]), axis=-1)
            distinct = rows[:, None] != columns[None, :]  # a clique pairs two different edges
            terms, p = clique_terms(u, np.broadcast_to(distinct[..., None], u.shape))
            value += float(terms[distinct].sum())
            p1, p2 = p[..., 0] * distinct, p[..., 1] * distinct
            grad_r[rows] -= w1 * p1.sum(axis=1)
            grad_r -= w2 * p2.sum(axis=0)
            gw1 -= float((p1.sum(axis=1) * r[rows]).sum())
            gw2 -= float((p2.sum(axis=0) * r).sum())
        return value, grad_r, gw1, gw2
    # random: each edge with `degree` partners (never itself) in each of n_topologies CDNs
    if E < 2:
        return 0.0, grad_r, 0.0, 0.0
    k = int(degree) * int(n_topologies)
    partners = (np.arange(E)[:, None] + rng.integers(1, E, (E, k))) % E
    u = np.stack([np.broadcast_to(-w1 * r[:, None], (E, k)), -w2 * r[partners]], axis=-1)
    terms, p = clique_terms(u, np.ones(u.shape, dtype=bool))
    scale = 1.0 / n_topologies  # the average of the random CDNs' losses
    value = scale * float(terms.sum())
    p1, p2 = scale * p[..., 0], scale * p[..., 1]
    grad_r -= w1 * p1.sum(axis=1)
    np.add.at(grad_r, partners.ravel(), -w2 * p2.ravel())
    gw1 = -float((p1.sum(axis=1) * r).sum())
    gw2 = -float((p2 * r[partners]).sum())
    return value, grad_r, gw1, gw2


# the CDN's options and their defaults, written once: cdn's signature (which the registry and the
# docs read), cdn_with_weights' and CDNLoss' take them from here
DEFAULTS = {"topology": "full", "w1": 1.0, "w2": 1.0, "degree": 1, "n_topologies": 1, "seed": 0, "reduction": "sum",
            "backend": "numba", "block_elements": PAIR_BLOCK_ELEMENTS}


def cdn_with_weights(scores, labels, mask, *, topology: str = DEFAULTS["topology"], w1: float = DEFAULTS["w1"],
                     w2: float = DEFAULTS["w2"], degree: int = DEFAULTS["degree"],
                     n_topologies: int = DEFAULTS["n_topologies"], seed: int = DEFAULTS["seed"],
                     reduction: str = DEFAULTS["reduction"], backend: str = DEFAULTS["backend"],
                     block_elements: int = DEFAULTS["block_elements"]):
    """The CDN loss (see the module docstring) and its gradients: (value, d/dscores, d/d(w1, w2))."""
    s, y, mask = clean(scores, labels, mask)
    Q = s.shape[0]
    grad = np.zeros(s.shape)
    per_query, gw = np.zeros(Q), np.zeros((Q, 2))
    active = np.zeros(Q, dtype=bool)
    for q in range(Q):
        cols = np.flatnonzero(mask[q])
        heads, tails = order_edges(y[q, cols])
        if not len(heads):
            continue
        active[q] = True
        rng = np.random.default_rng([seed, q]) if topology == "random" else None
        r = s[q, cols[heads]] - s[q, cols[tails]]
        per_query[q], grad_r, gw[q, 0], gw[q, 1] = _query_loss(r, topology, w1, w2, degree, n_topologies, rng,
                                                                block_elements, backend)
        if reduction == "mean":  # a query whose only edge has no partner has no clique: its terms are 0
            cliques = max(1, n_cliques(len(heads), topology, degree))
            per_query[q] /= cliques
            grad_r = grad_r / cliques
            gw[q] /= cliques
        g = np.bincount(heads, grad_r, len(cols)) - np.bincount(tails, grad_r, len(cols))
        grad[q, cols] = g
    weights = query_weights(active)
    return float((per_query * weights).sum()), grad * weights[:, None], (gw * weights[:, None]).sum(axis=0)


def cdn(scores, labels, mask, *, topology: str = DEFAULTS["topology"], w1: float = DEFAULTS["w1"],
        w2: float = DEFAULTS["w2"], degree: int = DEFAULTS["degree"], n_topologies: int = DEFAULTS["n_topologies"],
        seed: int = DEFAULTS["seed"], reduction: str = DEFAULTS["reduction"], backend: str = DEFAULTS["backend"],
        block_elements: int = DEFAULTS["block_elements"]):
    """StructRank's structured loss -log F for fixed CDN weights (w1, w2)."""
    value, grad, _ = cdn_with_weights(scores, labels, mask, topology=topology, w1=w1, w2=w2, degree=degree,
                                      n_topologies=n_topologies, seed=seed, reduction=reduction, backend=backend,
                                      block_elements=block_elements)
    return value, grad


class CDNLoss:
    """The CDN loss with trainable CDN weights theta = (w1, w2) >= 0: a loss with parameters
    of its own, which :class:`rankstudy.solvers.objective.Objective` appends to the scorer's.
    ``loss(scores, labels, mask, params) -> (value, d/dscores, d/dparams)``; its options are the
    ``cdn`` loss's, checked where they are given (StructRank's parameters)."""

    n_params = 2
    nonnegative = True  # w1, w2 >= 0 keep every CDN function a valid CDF

    def __init__(self, topology: str = DEFAULTS["topology"], **options) -> None:
        # the cdn loss's options but its weights, which are this loss's parameters
        self.options = {**{k: v for k, v in DEFAULTS.items() if k not in ("w1", "w2")}, **options, "topology": topology}

    def initial(self, rng: np.random.Generator) -> np.ndarray:
        return rng.uniform(0.0, 1.0, 2)  # Section 5: random in [0, 1]

    def __call__(self, scores, labels, mask, params):
        w1, w2 = (float(v) for v in params)
        return cdn_with_weights(scores, labels, mask, w1=max(w1, 0.0), w2=max(w2, 0.0), **self.options)


# --------------------------------------------------------------------------- special cases

def listmle_cdn(scores, labels, mask, *, seed: int = 0):
    """ListMLE as a CDN: for each position i of the label order (ties by the seeded
    tie-break, as :func:`rankstudy.losses.baseline.listmle`), one multivariate sigmoid over the
    edges from document pi_i to every later document."""
    s, y, mask = clean(scores, labels, mask)
    weights = query_weights(mask.sum(axis=1) >= 2)
    order = plackett_luce_order(y, mask, seed)
    s_sorted = np.take_along_axis(s, order, axis=1)
    real = np.take_along_axis(mask, order, axis=1)
    L = s.shape[1]
    later = np.triu(np.ones((L, L), dtype=bool), 1)  # edge pi_i -> pi_k for k > i
    present = later[None] & real[:, None, :] & real[:, :, None]
    u = -(s_sorted[:, :, None] - s_sorted[:, None, :])  # -r for edge (i, k)
    terms, p = clique_terms(u, present)
    value = float((np.where(real, terms, 0.0).sum(axis=1) * weights).sum())
    # r_ik = s_i - s_k: d/ds_i = -sum_k p_ik, d/ds_k = +p_ik
    grad_sorted = (-p.sum(axis=2) + p.sum(axis=1)) * weights[:, None]
    grad = np.zeros_like(s)
    np.put_along_axis(grad, order, grad_sorted, axis=1)
    return value, grad


def listnet_cdn(scores, labels, mask):
    """ListNet as a CDN: for each document i, one multivariate sigmoid over the edges from i to
    every other document, its -log weighted by the target top-one probability softmax(y)_i."""
    s, y, mask = clean(scores, labels, mask)
    weights = query_weights(mask.sum(axis=1) >= 2)
    target = np.where(mask, np.exp(masked_log_softmax(y, mask)), 0.0)
    L = s.shape[1]
    others = ~np.eye(L, dtype=bool)
    present = others[None] & mask[:, None, :] & mask[:, :, None]
    u = -(s[:, :, None] - s[:, None, :])
    terms, p = clique_terms(u, present)
    value = float(((target * terms).sum(axis=1) * weights).sum())
    tp = target[:, :, None] * p
    grad = (-tp.sum(axis=2) + tp.sum(axis=1)) * weights[:, None]
    return value, np.where(mask, grad, 0.0)
