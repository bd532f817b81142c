"""Cleaning steps against small brute-force implementations."""

from __future__ import annotations

import numpy as np
import pytest

from rankstudy.data import cleaning
from rankstudy.data.cleaning import (
    drop_near_duplicate_pairs,
    drop_queries_without_relevant,
    drop_zero_vectors,
)
from rankstudy.data.rankdata import RankData
from rankstudy.data.letor import read_letor


def make_data(rng: np.random.Generator, lengths: list[int], n_features: int = 20) -> RankData:
    n = sum(lengths)
    X = rng.normal(size=(n, n_features))
    y = rng.integers(0, 3, n).astype(float)
    qid = np.repeat(np.arange(len(lengths)) * 10 + 3, lengths)
    return RankData(X=X, y=y, qid=qid, docid=np.arange(n).astype(str),
                    offsets=np.concatenate([[0], np.cumsum(lengths)]))


def rows_of(data: RankData) -> list[tuple]:
    return list(zip(data.qid.tolist(), data.docid.tolist(), data.y.tolist(), map(tuple, data.X.tolist())))


def brute_keep_rows(data: RankData, keep) -> list[tuple]:
    return [r for r, k in zip(rows_of(data), keep) if k]


def brute_near_duplicates(data: RankData, cosine: float, rel: float) -> tuple[list[bool], list[float]]:
    """Rows to drop, and every within-query good/bad cosine (to check none sits on the threshold)."""
    drop = [False] * len(data.y)
    seen = []
    for q in range(data.n_queries):
        lo, hi = data.offsets[q], data.offsets[q + 1]
        for i in range(lo, hi):
            for j in range(lo, hi):
                if data.y[i] >= rel > data.y[j]:
                    ni, nj = np.linalg.norm(data.X[i]), np.linalg.norm(data.X[j])
                    c = 0.0 if ni == 0 or nj == 0 else float(data.X[i] @ data.X[j] / (ni * nj))
                    seen.append(c)
                    if c > cosine:
                        drop[i] = drop[j] = True
    return drop, seen


def check_structure(data: RankData) -> None:
    assert data.offsets[0] == 0 and data.offsets[-1] == len(data.y)
    assert np.all(np.diff(data.offsets) > 0)
    for q in range(data.n_queries):  # each block is one query
        assert len(set(data.qid[data.offsets[q]:data.offsets[q + 1]])) == 1


def test_drop_queries_without_relevant():
    data = make_data(np.random.default_rng(0), [3, 1, 5, 2, 4])
    data.y[:] = 0
    data.y[[1, 5, 12]] = [1, 2, 0.5]  # queries 0 and 2 have a relevant doc; query 4 only 0.5
    cleaned, dropped = drop_queries_without_relevant(data)
    assert dropped == 3
    assert list(cleaned.query_ids) == [3, 23]
    assert rows_of(cleaned) == rows_of(data)[0:3] + rows_of(data)[4:9]
    check_structure(cleaned)
    cleaned, dropped = drop_queries_without_relevant(data, rel_threshold=0.5)
    assert dropped == 2 and list(cleaned.query_ids) == [3, 23, 43]


def test_drop_queries_without_relevant_can_drop_everything():
    data = make_data(np.random.default_rng(0), [2, 2])
    data.y[:] = 0
    cleaned, dropped = drop_queries_without_relevant(data)
    assert dropped == 2 and cleaned.n_queries == 0 and cleaned.X.shape == (0, 20)


def test_drop_zero_vectors_removes_rows_and_emptied_queries():
    data = make_data(np.random.default_rng(1), [3, 2, 4])
    zero = [0, 3, 4, 8]  # query 1 becomes empty
    data.X[zero] = 0
    data.X[5, 1:] = 0  # one non-zero feature left: kept
    cleaned, dropped = drop_zero_vectors(data)
    keep = [i not in zero for i in range(len(data.y))]
    assert dropped == 4
    assert rows_of(cleaned) == brute_keep_rows(data, keep)
    assert list(cleaned.query_ids) == [3, 23]
    check_structure(cleaned)


def near_duplicate_data(seed: int) -> RankData:
    rng = np.random.default_rng(seed)
    lengths = list(rng.integers(1, 40, size=30)) + [300, 1, 2]
    data = make_data(rng, lengths)
    for q in range(data.n_queries):  # plant near and not-so-near copies inside queries
        lo, hi = data.offsets[q], data.offsets[q + 1]
        for _ in range((hi - lo) // 5):
            i, j = rng.integers(lo, hi, size=2)
            noise = rng.choice([1e-4, 0.3])  # cosine ~0.99999999 or ~0.95
            data.X[j] = data.X[i] + noise * rng.normal(size=data.n_features)
    data.X[rng.integers(0, len(data.y), size=10)] = 0  # zero vectors never count as duplicates
    return data


@pytest.mark.parametrize("block_elements", [cleaning.PAIR_BLOCK_ELEMENTS, 500])
def test_drop_near_duplicate_pairs_matches_brute_force(monkeypatch, block_elements):
    monkeypatch.setattr(cleaning, "PAIR_BLOCK_ELEMENTS", block_elements)
    data = near_duplicate_data(2)
    expected_drop, cosines = brute_near_duplicates(data, 0.99, 1.0)
    assert min(abs(np.array(cosines) - 0.99)) > 1e-6  # no pair sits on the threshold
    assert 10 < sum(expected_drop) < len(data.y) // 2  # the test data does exercise the rule

    cleaned, dropped = drop_near_duplicate_pairs(data, cosine=0.99, rel_threshold=1.0)
    assert dropped == sum(expected_drop)
    assert rows_of(cleaned) == brute_keep_rows(data, [not d for d in expected_drop])
    check_structure(cleaned)


def test_drop_near_duplicate_pairs_threshold_and_relevance():
    data = near_duplicate_data(3)
    for cosine, rel in [(0.9, 1.0), (0.99, 2.0)]:
        expected_drop, cosines = brute_near_duplicates(data, cosine, rel)
        assert min(abs(np.array(cosines) - cosine)) > 1e-6
        cleaned, dropped = drop_near_duplicate_pairs(data, cosine=cosine, rel_threshold=rel)
        assert dropped == sum(expected_drop)
        assert rows_of(cleaned) == brute_keep_rows(data, [not d for d in expected_drop])


def test_identical_documents_with_equal_labels_are_kept():
    data = make_data(np.random.default_rng(4), [4])
    data.X[1] = data.X[0]
    data.y[:] = [2, 1, 0, 0]  # both relevant: not a contradiction
    assert drop_near_duplicate_pairs(data)[1] == 0
    data.y[:] = [2, 0, 0, 0]
    cleaned, dropped = drop_near_duplicate_pairs(data)
    assert dropped == 2 and list(cleaned.docid) == ["2", "3"]


def test_mq2008_cleaning_matches_brute_force(mq2008_dir):
    data = read_letor(mq2008_dir / "Fold1" / "vali.txt.gz")
    cleaned, dropped = drop_zero_vectors(data)
    zero = ~data.X.any(axis=1)
    assert dropped == zero.sum()  # (zero in MQ2008 Fold1 vali)
    assert rows_of(cleaned) == brute_keep_rows(data, ~zero)

    expected_drop, cosines = brute_near_duplicates(data, 0.99, 1.0)
    cosines = np.array(cosines)
    assert not np.any(np.abs(cosines - 0.99) < 1e-9)
    cleaned, dropped = drop_near_duplicate_pairs(data)
    assert dropped == sum(expected_drop) > 0
    assert rows_of(cleaned) == brute_keep_rows(data, [not d for d in expected_drop])


def test_binarize_labels_at_the_threshold():
    rng = np.random.default_rng(0)
    data = make_data(rng, [4, 6, 3])
    data.y[:] = rng.integers(0, 5, len(data.y))
    binary, changed = cleaning.binarize_labels(data, rel_threshold=1)
    np.testing.assert_array_equal(binary.y, (data.y >= 1).astype(float))
    assert changed == int(np.count_nonzero(binary.y != data.y))
    np.testing.assert_array_equal(binary.X, data.X)
    np.testing.assert_array_equal(binary.offsets, data.offsets)


def test_binarised_labels_stay_relevant_under_a_threshold_above_one():
    """With relevant = label 2 a binarised relevant document keeps label 2, so MAP at that
    threshold finds it (labels of 1 would make every query score 0), and NDCG is binary NDCG."""
    from rankstudy.evaluation.metrics import per_query
    rng = np.random.default_rng(1)
    data = make_data(rng, [8, 6, 9])
    data.y[:] = [2, 1, 0, 0, 2, 1, 0, 1, 2, 0, 0, 0, 1, 2, 0, 0, 0, 1, 2, 2, 0, 1, 0]
    binary, _ = cleaning.binarize_labels(data, rel_threshold=2)
    np.testing.assert_array_equal(binary.y, np.where(data.y >= 2, 2.0, 0.0))
    scores = rng.normal(size=len(data.y))
    at_two = per_query(scores, binary.y, binary.offsets, ["map", "ndcg@5"], rel_threshold=2)
    ones = per_query(scores, (data.y >= 2).astype(float), data.offsets, ["map", "ndcg@5"], rel_threshold=1)
    np.testing.assert_allclose(at_two["map"], ones["map"])
    np.testing.assert_allclose(at_two["ndcg@5"], ones["ndcg@5"])
    assert (at_two["map"] > 0).all()


def brute_clashes(X, y, rel: float, cosine: float, same_group) -> tuple[list[bool], list[bool]]:
    """Per row: relevant side / non-relevant side of a clash, over the pairs ``same_group(i, j)``."""
    good_side, bad_side = [False] * len(y), [False] * len(y)
    for i in range(len(y)):
        for j in range(len(y)):
            if y[i] >= rel > y[j] and same_group(i, j):
                ni, nj = np.linalg.norm(X[i]), np.linalg.norm(X[j])
                if ni > 0 and nj > 0 and X[i] @ X[j] / (ni * nj) > cosine:
                    good_side[i] = bad_side[j] = True
    return good_side, bad_side


def test_near_duplicates_across_queries_and_on_one_side_match_brute_force(monkeypatch):
    monkeypatch.setattr(cleaning, "PAIR_BLOCK_ELEMENTS", 300)  # several blocks of relevant rows
    data = near_duplicate_data(5)
    for q in range(1, data.n_queries):  # plant copies of another query's documents too
        data.X[data.offsets[q]] = data.X[data.offsets[q - 1]] + 1e-4
    good, bad = brute_clashes(data.X, data.y, 1.0, 0.99, lambda i, j: True)
    within = brute_clashes(data.X, data.y, 1.0, 0.99, lambda i, j: data.qid[i] == data.qid[j])
    assert sum(good) > sum(within[0]) and sum(bad) > sum(within[1])  # the cross-query pairs add clashes
    for side, scope, expected in [("both", "split", np.logical_or(good, bad)), ("bad", "split", np.array(bad)),
                                  ("bad", "query", np.array(within[1]))]:
        cleaned, dropped = drop_near_duplicate_pairs(data, cosine=0.99, side=side, scope=scope)
        assert dropped == expected.sum()
        assert rows_of(cleaned) == brute_keep_rows(data, ~expected)
        check_structure(cleaned)
    with pytest.raises(ValueError, match="side"):
        drop_near_duplicate_pairs(data, side="good")


# --------------------------------------------------------------------------- values near float64's limit
# (issue 45.4: a finite value of 1.7e308 overflowed the row's norm, with a RuntimeWarning; the row became a
# zero vector and its clashes were silently lost: "dropped 0" where the same queries drop 9)

@pytest.mark.parametrize("scope", ["query", "split"])
def test_near_duplicates_do_not_change_when_rows_are_scaled_up_to_float64s_limit(scope):
    """A cosine ignores the length of each vector: rows scaled so that their largest value reaches
    1.7e308 (or falls to 1e-300) clash exactly as before, and nothing overflows."""
    data = near_duplicate_data(7)
    expected, dropped = drop_near_duplicate_pairs(data, scope=scope)
    assert dropped > 20
    peak = np.abs(data.X).max(axis=1)
    target = np.random.default_rng(0).choice([1.7e308, 1e300, 1.0, 1e-300], size=len(peak))
    factor = np.divide(target, peak, out=np.ones_like(peak), where=peak > 0)
    huge = RankData(X=data.X * factor[:, None], y=data.y, qid=data.qid, docid=data.docid, offsets=data.offsets)
    assert np.isfinite(huge.X).all() and np.abs(huge.X).max() > 1.6e308
    with np.errstate(over="raise", invalid="raise"):  # underflow is harmless: a tiny share of a row
        cleaned, n = drop_near_duplicate_pairs(huge, scope=scope)
    assert n == dropped and rows_of(cleaned) == brute_keep_rows(huge, np.isin(huge.docid, expected.docid))


def test_a_clash_whose_documents_hold_1_7e308_is_still_dropped():
    """The relevant and the non-relevant document both hold about 1.7e308 in feature 3: the same
    direction, so both go (before, each became a zero vector and neither went)."""
    X = np.array([[1.0, 2.0, 1.7e308, 0.5], [1.0, 2.0, 1.69e308, 0.5], [3.0, 0.0, 1.0, 1.0], [0.0, 1.0, 0.0, 2.0]])
    data = RankData(X=X, y=np.array([1.0, 0.0, 0.0, 2.0]), qid=np.array([1, 1, 1, 1]),
                    docid=np.array(["a", "b", "c", "d"]), offsets=np.array([0, 4]))
    for scope in ("query", "split"):
        with np.errstate(over="raise", invalid="raise"):  # underflow is harmless: a tiny share of a row
            cleaned, dropped = drop_near_duplicate_pairs(data, scope=scope)
        assert dropped == 2 and cleaned.docid.tolist() == ["c", "d"]
