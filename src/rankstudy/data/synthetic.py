"""The embedded default data set: a small LETOR-style benchmark generated from a seed.

No network, fully deterministic for a given seed. Five disjoint parts S1..S5
(queries split evenly) are rotated into folds exactly as LETOR 4.0 does.

Feature layout (column blocks, in this order; see :func:`feature_roles`):

``linear``
    Informative on their own: the latent utility is linear in them. Half of them
    are observed through a skewed monotone transform (``exp``, like count
    features) and with a per-query offset that carries no relevance (like
    query-dependent score scales), so normalisation choices matter.
``pairwise``
    Pairs ``(a, b)`` of independent zero-mean symmetric features; the utility
    contains ``tanh(1.5 a b)`` (sign agreement, softened). Flipping both signs
    leaves the label unchanged, so each feature alone is uncorrelated with the
    label and only the product ``a * b`` carries the signal.
``noise``
    Irrelevant (some Gaussian, some skewed).
``constant``
    All-zero, constant 1, and constant-within-query (varies across queries),
    as LETOR files contain.

Labels 0..4 come from cutting ``utility + query difficulty + noise`` at global
quantiles so about half the documents are 0 and grade 4 is rare; some queries
have no relevant document at all (as in MQ2007/MQ2008).
"""

from __future__ import annotations

import numpy as np

from rankstudy.data.rankdata import RankData
from rankstudy.data.rotation import N_PARTS

# cumulative label shares: P(label <= 0) = 0.50, <= 1: 0.78, <= 2: 0.92, <= 3: 0.98
_LABEL_CUTS = (0.50, 0.78, 0.92, 0.98)
_QID_BASE = 10001
_CHUNK_ROWS = 1 << 16


def feature_roles(n_features: int = 24, n_linear: int = 6, n_pair_groups: int = 4,
                  n_constant: int = 3) -> dict[str, list[int]]:
    """Column indices of each feature role; ``pairwise`` is listed as a, b, a, b, ..."""
    n_noise = n_features - n_linear - 2 * n_pair_groups - n_constant
    if min(n_linear, n_pair_groups, n_noise) < 0 or n_constant < 3:
        raise ValueError(
            f"n_features={n_features} too small for {n_linear} linear, {n_pair_groups} pairs "
            f"and {n_constant} (>= 3) constant features")
    cols = np.arange(n_features)
    bounds = np.cumsum([n_linear, 2 * n_pair_groups, n_noise])
    lin, pair, noise, const = np.split(cols, bounds)
    return {"linear": lin.tolist(), "pairwise": pair.tolist(), "noise": noise.tolist(),
            "constant": const.tolist()}


def _query_lengths(rng: np.random.Generator, n_queries: int, min_len: int, max_len: int,
                   median_len: float) -> np.ndarray:
    # log-normal: many short queries, a long tail up to max_len, like LETOR
    lengths = np.rint(np.exp(rng.normal(np.log(median_len), 0.8, n_queries)))
    return np.clip(lengths, min_len, max_len).astype(np.int64)


def make_parts(seed: int = 0, n_queries: int = 250, n_features: int = 24, *,
               n_linear: int = 6, n_pair_groups: int = 4, n_constant: int = 3,
               min_len: int = 3, max_len: int = 150, median_len: float = 34.0,
               pair_weight: float = 1.0, label_noise: float = 0.5, corrupt_share: float = 0.0) -> list[RankData]:
    """Five disjoint LETOR-style parts S1..S5 (about 12k documents with the defaults).

    ``corrupt_share``: the share of queries whose labels are shuffled among their documents, so
    that all of such a query's preferences are wrong together: preferences correlated within a
    query, the case a fully connected CDN is built for (Huang and Frey 2008). The corrupted
    queries come from a stream of their own, so the other queries are those of ``corrupt_share=0``.
    """
    if not 0.0 <= corrupt_share <= 1.0:
        raise ValueError(f"corrupt_share must be in [0, 1], got {corrupt_share!r}")
    if n_queries < N_PARTS:
        raise ValueError(f"need at least {N_PARTS} queries, got {n_queries}")
    roles = feature_roles(n_features, n_linear, n_pair_groups, n_constant)
    rng = np.random.default_rng(seed)

    lengths = _query_lengths(rng, n_queries, min_len, max_len, median_len)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    n = int(offsets[-1])
    q_of_row = np.repeat(np.arange(n_queries), lengths)

    X = np.zeros((n, n_features))
    # latent utility: linear part on standard-normal latents
    latent = rng.standard_normal((n, n_linear))
    w_linear = rng.uniform(0.5, 1.0, n_linear) * rng.choice([-1.0, 1.0], n_linear)
    utility = latent @ w_linear / np.sqrt(np.sum(w_linear ** 2))
    observed = latent.copy()
    skewed = np.arange(n_linear) % 2 == 1
    observed[:, skewed] = np.exp(0.6 * latent[:, skewed])  # monotone, so same information
    query_shift = rng.normal(0.0, 1.5, (n_queries, n_linear)) * skewed
    X[:, roles["linear"]] = observed + query_shift[q_of_row]

    # pairwise-only part: symmetric zero-mean features, signal in the product's sign
    ab = rng.standard_normal((n, 2 * n_pair_groups))
    a, b = ab[:, 0::2], ab[:, 1::2]
    interaction = np.tanh(1.5 * a * b).sum(axis=1)
    if n_pair_groups:
        interaction /= np.sqrt(n_pair_groups * np.var(np.tanh(1.5 * a * b), axis=0).mean())
    X[:, roles["pairwise"]] = ab
    utility = utility + pair_weight * interaction

    # the noise block is most of X: drawn in row chunks (the same stream as one (n, k) draw, which
    # fills rows in order) so no second matrix of its size is held
    noise_cols = roles["noise"]
    for start in range(0, n, _CHUNK_ROWS):
        noise = rng.standard_normal((min(_CHUNK_ROWS, n - start), len(noise_cols)))
        noise[:, 1::2] = np.exp(noise[:, 1::2])  # skewed irrelevant features
        X[start:start + len(noise), noise_cols] = noise

    zero_col, one_col, query_col = roles["constant"][:3]
    X[:, one_col] = 1.0  # column zero_col stays all zero
    X[:, query_col] = rng.uniform(0.0, 10.0, n_queries)[q_of_row]
    for extra in roles["constant"][3:]:
        X[:, extra] = 0.0

    # per-query difficulty makes some queries all-zero and others rich in relevant documents
    difficulty = rng.normal(0.0, 0.6, n_queries)[q_of_row]
    score = utility + difficulty + rng.normal(0.0, label_noise, n)
    y = np.searchsorted(np.quantile(score, _LABEL_CUTS), score, side="right").astype(np.float64)
    if corrupt_share > 0:
        corrupt_rng = np.random.default_rng([seed, 1])
        corrupted = corrupt_rng.random(n_queries) < corrupt_share
        # one random key per row, sorted within the query: a within-query shuffle of the labels
        key = np.where(corrupted[q_of_row], corrupt_rng.random(n), np.arange(n) / n)
        shuffled = np.lexsort((key, q_of_row))
        y = y[shuffled]

    qids = _QID_BASE + np.arange(n_queries, dtype=np.int64)
    qid = qids[q_of_row]
    pos = np.arange(n) - offsets[q_of_row]
    docid = np.char.add(np.char.add(np.char.add("D", qid.astype(str)), "-"), pos.astype(str))
    full = RankData(X=X, y=y, qid=qid, docid=docid, offsets=offsets)

    # split queries into 5 contiguous, even groups (queries are already in random order); each
    # part is a view of its rows, not a copy
    bounds = np.cumsum([0] + [len(s) for s in np.array_split(np.arange(n_queries), N_PARTS)])
    return [full.query_range(bounds[k], bounds[k + 1]) for k in range(N_PARTS)]
