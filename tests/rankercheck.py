"""A data set with a certain linear signal and an independent NDCG@10, shared by the ranker tests
(tests/test_rankers.py) and the docs' examples (tests/test_docs_examples.py)."""

from __future__ import annotations

import numpy as np

from rankstudy.data.rankdata import RankData

W_TRUE = np.array([1.0, -0.8, 0.6, 0.4, -0.3, 0.2, 0.0, 0.0])


def make_data(n_queries: int, seed: int) -> RankData:
    """Labels 0-4 cut from a noisy linear utility (skewed towards 0, like LETOR)."""
    rng = np.random.default_rng(seed)
    lengths = rng.integers(5, 40, n_queries)
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    n = int(offsets[-1])
    X = rng.normal(size=(n, len(W_TRUE)))
    utility = X @ W_TRUE + 0.5 * rng.normal(size=n)
    y = np.digitize(utility, np.linalg.norm(W_TRUE) * np.array([0.5, 1.0, 1.5, 2.0])).astype(float)
    return RankData(X=X, y=y, qid=np.repeat(np.arange(n_queries) + 1000 * seed, lengths),
                    docid=np.arange(n).astype(str), offsets=offsets)


def mean_ndcg_at_10(scores: np.ndarray, data: RankData) -> float:
    """Independent reference: gains 2^r - 1, log2 discounts, queries without relevant docs skipped."""
    discounts = 1.0 / np.log2(np.arange(2, 12))
    values = []
    for q in range(data.n_queries):
        a, b = data.offsets[q], data.offsets[q + 1]
        gains = 2.0 ** data.y[a:b] - 1
        ideal = np.sort(gains)[::-1][:10]
        if ideal.sum() == 0:
            continue
        top = np.argsort(-scores[a:b], kind="stable")[:10]
        values.append((gains[top] * discounts[: len(top)]).sum() / (ideal * discounts[: len(ideal)]).sum())
    return float(np.mean(values))
