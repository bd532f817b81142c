"""Data-set cleaning steps for LETOR-style data.

Each function returns ``(cleaned RankData, number dropped)`` and removes query
blocks left empty. ``drop_zero_vectors`` and ``drop_near_duplicate_pairs``
follow the LETOR cleaning of Chakrabarti et al. (2008, "Structured learning for
non-smooth ranking losses"): all-zero documents carry no signal, and a relevant
and a non-relevant document with (almost) the same features contradict each
other.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from rankstudy.data.rankdata import REL_THRESHOLD, RankData

PAIR_BLOCK_ELEMENTS = 1 << 22  # bounds the padded (queries, L, L) similarity blocks to ~32 MB


def drop_queries_without_relevant(data: RankData, rel_threshold: float = REL_THRESHOLD) -> tuple[RankData, int]:
    """Drop queries where no document has label >= ``rel_threshold``; count = queries dropped."""
    if data.n_queries == 0:
        return data, 0
    best = np.maximum.reduceat(data.y, data.offsets[:-1])
    keep = best >= rel_threshold
    return data.select_queries(keep), int(np.count_nonzero(~keep))


def binarize_labels(data: RankData, rel_threshold: float = REL_THRESHOLD) -> tuple[RankData, int]:
    """Labels become relevant (label >= ``rel_threshold``) or 0, as papers that use binary
    relevance did (Dubey et al. 2009); count = documents whose label changed. A relevant label
    is ``binary_label(rel_threshold)``: 1, or the threshold when it is above 1, so the run's
    threshold still finds the relevant documents (MAP, MRR, the rankers) and NDCG, whose gains
    are then all equal, is binary NDCG."""
    binary = np.where(data.y >= rel_threshold, binary_label(rel_threshold), 0.0)
    changed = int(np.count_nonzero(binary != data.y))
    return dataclasses.replace(data, y=binary), changed


def binary_label(rel_threshold: float) -> float:
    """The label of a relevant document after binarisation (binarize_labels)."""
    return max(1.0, float(rel_threshold))


def drop_zero_vectors(data: RankData) -> tuple[RankData, int]:
    """Drop documents whose feature vector is all zeros; count = documents dropped."""
    keep = np.any(data.X != 0, axis=1)
    return keep_rows(data, keep), int(np.count_nonzero(~keep))


NEAR_DUPLICATE_SIDES = ("both", "bad")  # which documents of a clash go
NEAR_DUPLICATE_SCOPES = ("query", "split", "fold")  # where a clash is looked for (see clash_mask)


def drop_near_duplicate_pairs(
    data: RankData, cosine: float = 0.99, rel_threshold: float = REL_THRESHOLD, side: str = "both", scope: str = "query"
) -> tuple[RankData, int]:
    """Drop the documents of every pair (relevant i, non-relevant j) whose feature vectors have
    cosine similarity > ``cosine``; count = documents dropped.

    Relevant means label >= ``rel_threshold``. ``side``: ``both`` documents of a clash, or only
    the non-relevant one (``bad``). ``scope``: pairs within a query, or across the queries of the
    split (``split``; ``fold`` is the same for one split). An all-zero vector has no direction and
    is never a near-duplicate of anything.
    """
    drop = clash_mask(data.X, data.y >= rel_threshold, data.offsets, cosine, side,
                      "query" if scope == "query" else "all")
    return keep_rows(data, ~drop), int(np.count_nonzero(drop))


def clash_mask(X: np.ndarray, good: np.ndarray, offsets: np.ndarray, cosine: float, side: str = "both",
               scope: str = "query") -> np.ndarray:
    """True for the documents to drop: those in a good/bad pair with cosine > ``cosine``, the pairs
    taken within each query (``scope="query"``, ``offsets`` bounds the queries) or among all rows
    (``"all"``: the data set before it is split, when X holds every split)."""
    if side not in NEAR_DUPLICATE_SIDES:
        raise ValueError(f"near-duplicate side {side!r}: one of {NEAR_DUPLICATE_SIDES}")
    unit = unit_rows(X)
    if scope == "query":
        good_hit, bad_hit = _clashes_within_queries(unit, good, offsets, cosine)
    elif scope == "all":
        good_hit, bad_hit = _clashes_across_rows(unit, good, cosine)
    else:
        raise ValueError(f"near-duplicate scope {scope!r}: 'query' or 'all'")
    return bad_hit | good_hit if side == "both" else bad_hit


def unit_rows(X: np.ndarray) -> np.ndarray:
    """Each row of ``X`` scaled to length 1 (all-zero rows stay zero), for any finite values: the
    row is first divided by its largest absolute value, since the sum of squares of a row holding
    1.7e308 overflows to inf (the row then became a zero vector, and its clashes were lost). A
    cosine does not change when a row is scaled, so this is the same direction."""
    X = np.asarray(X, dtype=np.float64)
    peak = np.abs(X).max(axis=1, keepdims=True) if X.shape[1] else np.zeros((len(X), 1))
    scaled = np.divide(X, peak, out=np.zeros_like(X), where=peak > 0)  # entries in [-1, 1]
    norms = np.sqrt(np.einsum("ij,ij->i", scaled, scaled))[:, None]  # in [1, sqrt(m)] for a non-zero row
    return np.divide(scaled, norms, out=np.zeros_like(X), where=norms > 0)


def _clashes_within_queries(unit: np.ndarray, good: np.ndarray, offsets: np.ndarray, cosine: float):
    """Per document: is it the relevant side / the non-relevant side of a within-query clash."""
    good_hit = np.zeros(len(good), dtype=bool)
    bad_hit = np.zeros(len(good), dtype=bool)
    lengths = np.diff(offsets)
    for queries in _query_blocks(lengths, unit.shape[1]):
        rows, valid = _padded_rows(offsets, queries)
        U = unit[rows] * valid[..., None]  # (B, L, m); padding rows are zero vectors
        similar = np.matmul(U, U.transpose(0, 2, 1)) > cosine  # (B, L, L)
        is_good, is_bad = valid & good[rows], valid & ~good[rows]
        clash = similar & is_good[:, :, None] & is_bad[:, None, :]
        good_hit[rows[clash.any(axis=2)]] = True
        bad_hit[rows[clash.any(axis=1)]] = True
    return good_hit, bad_hit


def _clashes_across_rows(unit: np.ndarray, good: np.ndarray, cosine: float):
    """As :func:`_clashes_within_queries` for pairs of any two rows: blocks of relevant rows
    against every non-relevant row, one matrix product per block."""
    goods, bads = np.flatnonzero(good), np.flatnonzero(~good)
    good_hit = np.zeros(len(good), dtype=bool)
    bad_hit = np.zeros(len(good), dtype=bool)
    if len(goods) == 0 or len(bads) == 0:
        return good_hit, bad_hit
    per_block = max(1, PAIR_BLOCK_ELEMENTS // len(bads))
    bad_units = unit[bads].T
    for start in range(0, len(goods), per_block):
        block = goods[start:start + per_block]
        similar = unit[block] @ bad_units > cosine  # (block, bads)
        good_hit[block[similar.any(axis=1)]] = True
        bad_hit[bads[similar.any(axis=0)]] = True
    return good_hit, bad_hit


def keep_rows(data: RankData, keep: np.ndarray) -> RankData:
    """The documents where ``keep`` is true, in the same order; queries left empty disappear."""
    keep = np.asarray(keep, dtype=bool)
    kept = np.add.reduceat(keep.astype(np.int64), data.offsets[:-1]) if data.n_queries else np.zeros(0, np.int64)
    lengths = kept[kept > 0]
    return RankData(
        X=data.X[keep], y=data.y[keep], qid=data.qid[keep], docid=data.docid[keep],
        offsets=np.concatenate([[0], np.cumsum(lengths)]),
    )


def _query_blocks(lengths: np.ndarray, n_features: int):
    """Yield arrays of query indices whose padded blocks stay within PAIR_BLOCK_ELEMENTS.

    Queries are grouped by power-of-two length class so padding wastes at most half.
    """
    length_class = np.ceil(np.log2(np.maximum(lengths, 1))).astype(int)
    for c in np.unique(length_class):
        queries = np.flatnonzero(length_class == c)
        longest = int(lengths[queries].max())
        per_block = max(1, PAIR_BLOCK_ELEMENTS // (longest * max(longest, n_features)))
        for start in range(0, len(queries), per_block):
            yield queries[start:start + per_block]


def _padded_rows(offsets: np.ndarray, queries: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(B, L) row indices of the given queries' documents and a mask of the real ones."""
    starts, lengths = offsets[queries], offsets[queries + 1] - offsets[queries]
    position = np.arange(int(lengths.max()))
    valid = position[None, :] < lengths[:, None]
    rows = np.where(valid, starts[:, None] + position[None, :], starts[:, None])
    return rows, valid
