"""Helpers shared by the tests of every loss family: central finite differences, a padded
batch with the awkward cases, a data set with a certain linear signal, peak memory."""

from __future__ import annotations

import tracemalloc

import numpy as np

from rankstudy.data.rankdata import RankData
from rankstudy.data.blocks import pad
from rankstudy.evaluation.metrics import per_query


def finite_difference(fn, s, h=1e-6):
    """Numerical gradient of the scalar ``fn`` at ``s``, one coordinate at a time."""
    grad = np.zeros_like(s)
    for idx in np.ndindex(*s.shape):
        step = np.zeros_like(s)
        step[idx] = h
        grad[idx] = (fn(s + step) - fn(s - step)) / (2 * h)
    return grad


def relative_error(a, b):
    return np.linalg.norm(a - b) / max(np.linalg.norm(a) + np.linalg.norm(b), 1e-300)


def make_batch(seed: int = 0, lengths=(1, 2, 5, 7, 3, 7, 4, 6)):
    """Padded batch with a single-document query (0), an all-equal-label query (3),
    label ties everywhere (labels 0..3) and padding (lengths differ)."""
    rng = np.random.default_rng(seed)
    lengths = np.asarray(lengths)
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    n = int(offsets[-1])
    labels = rng.integers(0, 4, n).astype(float)
    labels[offsets[3]:offsets[4]] = 2.0
    scores = 1.5 * rng.normal(size=n)  # wide enough to hit both sides of the hinge
    s, mask = pad(scores, offsets)
    y, _ = pad(labels, offsets)
    return s, y, mask


def linear_signal_data(seed, n_queries=60, n_features=8):
    """Labels 0..3 cut from a linear utility plus small noise: a linear ranker can do well."""
    rng = np.random.default_rng(seed)
    lengths = rng.integers(5, 30, n_queries)
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    n = int(offsets[-1])
    X = rng.normal(size=(n, n_features))
    w_true = np.random.default_rng(12345).normal(size=n_features)
    utility = X @ w_true + 0.3 * rng.normal(size=n)
    y = np.digitize(utility, np.quantile(utility, [0.5, 0.8, 0.95])).astype(float)
    qid = np.repeat(np.arange(n_queries), lengths)
    return RankData(X=X, y=y, qid=qid, docid=np.arange(n).astype(str), offsets=offsets)


def peak_bytes(fn, n_docs, **kw):
    """Peak traced allocation of one loss evaluation on a batch with an ``n_docs`` query."""
    rng = np.random.default_rng(n_docs)
    offsets = np.concatenate([[0], np.cumsum([n_docs, 3, 7, 1])])
    s, mask = pad(rng.normal(size=offsets[-1]), offsets)
    y, _ = pad(rng.integers(0, 5, offsets[-1]).astype(float), offsets)
    tracemalloc.start()
    try:
        value, grad = fn(s, y, mask, **kw)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert np.isfinite(value) and np.all(np.isfinite(grad))
    return peak


def ohsumed_shaped(seed: int, n_queries: int = 20, n_docs: int = 150, spread: int = 20, n_features: int = 12,
                   n_informative: int | None = None, noise: float = 5.0, cuts=(2 / 3,),
                   positive_weights: bool = False) -> RankData:
    """Synthetic data shaped like LETOR's OHSUMED, where the seeds' methods met their trouble: queries
    of n_docs +- spread documents; grades from a utility linear in the first ``n_informative``
    features (all by default) plus ``noise`` (5: the classes overlap, as on OHSUMED), cut at the
    utility's ``cuts`` quantiles within each query (2/3: the top third relevant, as on OHSUMED);
    features rounded to halves, then scaled to [0, 1] per query (QueryLevelNorm), so many
    documents tie on a feature. The true weights are the same for every seed."""
    rng = np.random.default_rng(seed)
    w_true = np.random.default_rng(777).normal(size=n_informative or n_features)
    if positive_weights:
        w_true = np.abs(w_true)
    X, y = [], []
    for _ in range(n_queries):
        n = int(rng.integers(n_docs - spread, n_docs + spread + 1))
        raw = rng.normal(size=(n, n_features))
        utility = raw[:, :len(w_true)] @ w_true + noise * rng.normal(size=n)
        y.append(np.digitize(utility, np.quantile(utility, cuts)).astype(float))
        raw = np.round(2.0 * raw) / 2.0
        lo, hi = raw.min(axis=0), raw.max(axis=0)
        X.append((raw - lo) / np.where(hi > lo, hi - lo, 1.0))
    lengths = [len(v) for v in y]
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    return RankData(X=np.vstack(X), y=np.concatenate(y), qid=np.repeat(np.arange(n_queries), lengths),
                    docid=np.arange(offsets[-1]).astype(str), offsets=offsets)


def mean_metric(scores, data, metric: str = "ndcg@10") -> float:
    """Mean over the split's queries of one metric of ``scores``."""
    return float(per_query(scores, data.y, data.offsets, [metric])[metric].mean())


def random_ndcg(data, draws: int = 20) -> float:
    """Mean NDCG@10 of ``draws`` seeded random rankings of the split."""
    rng = np.random.default_rng(0)
    return float(np.mean([mean_metric(rng.random(len(data.y)), data) for _ in range(draws)]))
