"""Tests for rankstudy.evaluation.metrics.

Reference values come from sources independent of our code: ranx (NDCG with 2^r - 1
gains, MAP, MRR, P@k), scikit-learn's roc_auc_score (AUC), a plain per-query loop
written here from Chapelle's ERR formula, and hand-worked examples (ties, policies).
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import pytest

from rankstudy.data.rankdata import RankData
from rankstudy.data.blocks import pad
from rankstudy.evaluation.metrics import (
    auc,
    average_precision,
    err,
    evaluate,
    mean_metrics,
    mrr,
    ndcg,
    parse_metric,
    per_query,
    precision,
)
from rankstudy.evaluation.ranking import rank


def random_queries(seed: int, n_queries: int = 200, max_len: int = 80, tie_decimals: int | None = None):
    """Flat scores, integer labels 0..4 and offsets. Lengths vary, some are 1, and some
    queries have only label 0. Scores are continuous (no ties) unless tie_decimals is given."""
    rng = np.random.default_rng(seed)
    lengths = np.concatenate([np.ones(10, dtype=np.int64), rng.integers(1, max_len + 1, n_queries - 10)])
    rng.shuffle(lengths)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    n = int(offsets[-1])
    labels = rng.choice(5, size=n, p=[0.5, 0.25, 0.15, 0.07, 0.03]).astype(np.float64)
    for q in rng.choice(n_queries, 8, replace=False):  # make sure some queries have no relevant doc
        labels[offsets[q]:offsets[q + 1]] = 0.0
    scores = rng.normal(size=n)
    if tie_decimals is not None:
        scores = np.round(scores, tie_decimals)
    return scores, labels, offsets


def query_slices(offsets):
    return [slice(int(a), int(b)) for a, b in zip(offsets[:-1], offsets[1:])]


# --- against ranx -----------------------------------------------------------------

# our name -> ranx name. ranx's plain "ndcg" uses linear gains; "ndcg_burges" uses
# 2^r - 1. Its k=0 (no @k) means the whole list; "-lN" sets the relevance level to N.
# For queries without a relevant document, ranx returns 0 (our "zero" policy), and its
# P@k also divides by k even when the list is shorter.
RANX_NAMES = {
    "ndcg@1": "ndcg_burges@1", "ndcg@5": "ndcg_burges@5", "ndcg@10": "ndcg_burges@10",
    "ndcg@1000": "ndcg_burges@1000", "ndcg": "ndcg_burges",
    "map": "map", "mrr": "mrr", "mrr@1": "mrr@1", "mrr@3": "mrr@3", "mrr@10": "mrr@10",
    "p@1": "precision@1", "p@5": "precision@5", "p@10": "precision@10", "p@100": "precision@100",
}
RANX_NAMES_THRESHOLD_2 = {"map": "map-l2", "mrr": "mrr-l2", "p@5": "precision@5-l2"}


@pytest.fixture(scope="module")
def ranx_case():
    import ranx  # a test dependency: missing, the reference check fails rather than skips
    scores, labels, offsets = random_queries(seed=7)
    for s in query_slices(offsets):  # the comparison needs a tie-free ranking
        assert len(np.unique(scores[s])) == s.stop - s.start
    qids = [f"q{q:04d}" for q in range(len(offsets) - 1)]
    qrels = {qid: {f"d{j}": int(labels[s][j]) for j in range(s.stop - s.start)}
             for qid, s in zip(qids, query_slices(offsets))}
    run = {qid: {f"d{j}": float(scores[s][j]) for j in range(s.stop - s.start)}
           for qid, s in zip(qids, query_slices(offsets))}
    ranx_metrics = list(RANX_NAMES.values()) + list(RANX_NAMES_THRESHOLD_2.values())
    ranx_run = ranx.Run(run)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # numba type-safety chatter from inside ranx
        ranx.evaluate(ranx.Qrels(qrels), ranx_run, ranx_metrics, return_mean=False)
    reference = {m: np.array([ranx_run.scores[m][qid] for qid in qids]) for m in ranx_metrics}
    return scores, labels, offsets, reference


# on one worker with the other tests that call ranx: its numba kernels compile in the first
# process that calls them (30-50 s in a fresh environment) and are reused in that process
@pytest.mark.xdist_group("ranx")
def test_matches_ranx(ranx_case):
    scores, labels, offsets, reference = ranx_case
    ours = per_query(scores, labels, offsets, list(RANX_NAMES))
    for name, ranx_name in RANX_NAMES.items():
        np.testing.assert_allclose(ours[name], reference[ranx_name], rtol=0, atol=1e-9, err_msg=name)
    # the comparison exercised queries with and without relevant documents, and short lists
    assert (ours["map"] == 0).sum() >= 8 and (ours["map"] > 0).sum() >= 100
    assert (np.diff(offsets) == 1).sum() >= 10


@pytest.mark.xdist_group("ranx")
def test_matches_ranx_with_rel_threshold_2(ranx_case):
    scores, labels, offsets, reference = ranx_case
    ours = per_query(scores, labels, offsets, list(RANX_NAMES_THRESHOLD_2), rel_threshold=2)
    for name, ranx_name in RANX_NAMES_THRESHOLD_2.items():
        np.testing.assert_allclose(ours[name], reference[ranx_name], rtol=0, atol=1e-9, err_msg=name)
    # and the threshold really changes the answer
    assert not np.allclose(ours["map"], per_query(scores, labels, offsets, ["map"])["map"])


# --- ERR against a per-query loop from Chapelle's formula ---------------------------

def err_reference(scores, labels, max_label, k=None):
    order = sorted(range(len(scores)), key=lambda i: -scores[i])  # Python's sort is stable
    total, p_reach = 0.0, 1.0
    for rank_, i in enumerate(order[:k], start=1):
        stop = (2.0 ** labels[i] - 1.0) / 2.0 ** max_label
        total += p_reach * stop / rank_
        p_reach *= 1.0 - stop
    return total


@pytest.mark.parametrize("k", [None, 1, 3, 10, 1000])
@pytest.mark.parametrize("max_label", [None, 6.0])
def test_err_matches_reference_loop(k, max_label):
    scores, labels, offsets = random_queries(seed=11, tie_decimals=1)  # ties exercise the stable order
    name = "err" if k is None else f"err@{k}"
    ours = per_query(scores, labels, offsets, [name], max_label=max_label)[name]
    top = labels.max() if max_label is None else max_label
    expected = [err_reference(scores[s], labels[s], top, k) for s in query_slices(offsets)]
    np.testing.assert_allclose(ours, expected, rtol=0, atol=1e-12)
    # a label-4 document ranked first gives R = 15/16 with the default max_label (4), 15/64 with 6
    assert labels.max() == 4.0 and (ours.max() > 0.5) == (max_label is None)


def test_err_rejects_max_label_below_data():
    with pytest.raises(ValueError, match="max_label"):
        per_query([0.1, 0.2], [0.0, 3.0], [0, 2], ["err"], max_label=2)


# --- AUC against scikit-learn -------------------------------------------------------

@pytest.mark.parametrize("tie_decimals", [None, 1])
def test_auc_matches_sklearn(tie_decimals):
    from sklearn.metrics import roc_auc_score  # a dependency: missing, this fails rather than skips
    scores, labels, offsets = random_queries(seed=3, tie_decimals=tie_decimals)
    for threshold in (1.0, 2.0):
        ours = per_query(scores, labels, offsets, ["auc"], rel_threshold=threshold, no_relevant="drop")["auc"]
        n_checked = 0
        for q, s in enumerate(query_slices(offsets)):
            relevant = labels[s] >= threshold
            if not relevant.any():  # undefined: the policy (drop)
                assert np.isnan(ours[q])
                continue
            if relevant.all():  # every relevant document above every (absent) non-relevant one, as MAP
                assert ours[q] == 1.0
                continue
            assert ours[q] == pytest.approx(roc_auc_score(relevant, scores[s]), abs=1e-12)
            n_checked += 1
        assert n_checked >= 100


# --- the tie rule -------------------------------------------------------------------

def test_ties_keep_input_order():
    # three tied documents: the relevant one is ranked where it sits in the input
    s = [0.5, 0.5, 0.5]
    last = per_query(s, [0, 0, 1], [0, 3], ["mrr", "map", "p@1", "ndcg", "auc"])
    assert last["mrr"][0] == pytest.approx(1 / 3)
    assert last["map"][0] == pytest.approx(1 / 3)
    assert last["p@1"][0] == 0.0
    assert last["ndcg"][0] == pytest.approx(1 / math.log2(4))
    first = per_query(s, [1, 0, 0], [0, 3], ["mrr", "map", "p@1", "ndcg", "auc"])
    assert first["mrr"][0] == first["map"][0] == first["p@1"][0] == first["ndcg"][0] == 1.0
    # AUC is pairwise: a tied pair counts 1/2 regardless of input order
    assert last["auc"][0] == first["auc"][0] == 0.5


def test_rank_sorts_descending_and_stable():
    scores, mask = pad(np.array([1.0, 2.0, 2.0, 0.0]), np.array([0, 4]))
    labels, _ = pad(np.array([3.0, 0.0, 2.0, 1.0]), np.array([0, 4]))
    ranking = rank(scores, labels, mask)
    np.testing.assert_array_equal(ranking.labels[0], [0.0, 2.0, 3.0, 1.0])
    np.testing.assert_array_equal(ranking.flat_scores, [2.0, 2.0, 1.0, 0.0])
    np.testing.assert_array_equal(ranking.flat_labels, [0.0, 2.0, 3.0, 1.0])


def test_padding_ranks_last_even_below_minus_inf():
    # mask with a hole before a real document scored -inf: both real documents are
    # ranked, the padding is not (the ranking is as wide as the longest real row)
    scores = np.array([[0.0, -np.inf, 3.0], [1.0, 0.0, 0.0]])
    labels = np.array([[5.0, 1.0, 0.0], [2.0, 0.0, 0.0]])
    ranking = rank(scores, labels, np.array([[False, True, True], [True, False, False]]))
    np.testing.assert_array_equal(ranking.mask, [[True, True], [True, False]])
    np.testing.assert_array_equal(ranking.labels, [[0.0, 1.0], [2.0, 0.0]])
    np.testing.assert_array_equal(ranking.offsets, [0, 2, 3])
    np.testing.assert_array_equal(ranking.flat_scores, [3.0, -np.inf, 1.0])


def test_nan_scores_rejected():
    with pytest.raises(ValueError, match="NaN"):
        per_query([0.1, np.nan], [1.0, 0.0], [0, 2], ["ndcg"])


# --- worked examples and edge cases -------------------------------------------------

def test_hand_worked_example():
    # ranking by score: labels [0, 1, 2]
    out = per_query([0.1, 0.9, 0.5], [2, 0, 1], [0, 3], ["ndcg@2", "ndcg", "err", "mrr", "map", "p@2", "p@10", "auc"])
    ideal = 3 + 1 / math.log2(3) + 0
    assert out["ndcg@2"][0] == pytest.approx((1 / math.log2(3)) / ideal)
    assert out["ndcg"][0] == pytest.approx((1 / math.log2(3) + 3 / 2) / ideal)
    assert out["err"][0] == pytest.approx(0.25 / 2 + 0.75 * 0.75 / 3)  # max_label 2: R = 0, 1/4, 3/4
    assert out["mrr"][0] == pytest.approx(1 / 2)
    assert out["map"][0] == pytest.approx((1 / 2 + 2 / 3) / 2)
    assert out["p@2"][0] == pytest.approx(1 / 2)
    assert out["p@10"][0] == pytest.approx(2 / 10)  # denominator k even for a 3-document list
    assert out["auc"][0] == 0.0  # both relevant documents score below the non-relevant one


def test_k_longer_than_list_uses_whole_list():
    s, y, off = random_queries(seed=5, n_queries=30, max_len=20)
    out = per_query(s, y, off, ["ndcg@20", "ndcg@500", "ndcg", "err@500", "err"])
    np.testing.assert_array_equal(out["ndcg@20"], out["ndcg"])
    np.testing.assert_array_equal(out["ndcg@500"], out["ndcg"])
    np.testing.assert_array_equal(out["err@500"], out["err"])


def ndcg_reference(scores, labels, k=None):
    order = sorted(range(len(scores)), key=lambda i: -scores[i])
    def dcg(ranked_labels):
        return sum((2.0 ** r - 1.0) / math.log2(i + 2) for i, r in enumerate(ranked_labels[:k]))
    ideal = dcg(sorted(labels, reverse=True))
    return dcg([labels[i] for i in order]) / ideal if ideal > 0 else 0.0


@pytest.mark.parametrize("k", [None, 3, 30])
@pytest.mark.parametrize("label_form", ["shifted", "halved", "wide"])
def test_ndcg_unusual_labels_match_reference_loop(k, label_form):
    # NDCG's ideal DCG counts grades when labels are a few integers and sorts them
    # otherwise; check both paths. Negative grades (e.g. a "bad" class) give
    # negative gains, and padding must never take their place in the ideal ranking.
    scores, labels, offsets = random_queries(seed=13, n_queries=60, max_len=40)
    labels = {"shifted": labels - 1.0, "halved": labels / 2 - 0.5, "wide": labels * 20 - 1.0}[label_form]
    name = "ndcg" if k is None else f"ndcg@{k}"
    ours = per_query(scores, labels, offsets, [name])[name]
    expected = [ndcg_reference(scores[s], labels[s], k) for s in query_slices(offsets)]
    np.testing.assert_allclose(ours, expected, rtol=0, atol=1e-12)


def test_padded_functions_agree_with_per_query():
    s, y, off = random_queries(seed=9, n_queries=50)
    ps, mask = pad(s, off)
    py, _ = pad(y, off)
    flat = per_query(s, y, off, ["ndcg@5", "err@3", "mrr", "map", "p@5", "auc"], rel_threshold=2, no_relevant="drop")
    kw = dict(no_relevant="drop")
    np.testing.assert_array_equal(ndcg(ps, py, mask, k=5, **kw), flat["ndcg@5"])
    np.testing.assert_array_equal(err(ps, py, mask, k=3, **kw), flat["err@3"])
    np.testing.assert_array_equal(mrr(ps, py, mask, rel_threshold=2, **kw), flat["mrr"])
    np.testing.assert_array_equal(average_precision(ps, py, mask, rel_threshold=2, **kw), flat["map"])
    np.testing.assert_array_equal(precision(ps, py, mask, k=5, rel_threshold=2, **kw), flat["p@5"])
    np.testing.assert_array_equal(auc(ps, py, mask, rel_threshold=2, **kw), flat["auc"])


# --- no_relevant policies -----------------------------------------------------------

ALL_METRICS = ["ndcg@2", "ndcg", "err", "mrr", "map", "p@2", "auc"]
# query 0: no relevant doc; query 1: only relevant docs (AUC 1, as MAP); query 2: mixed
POLICY_SCORES = [0.3, 0.2, 0.1, 0.5, 0.4, 0.2, 0.9]
POLICY_LABELS = [0, 0, 0, 2, 1, 0, 1]
POLICY_OFFSETS = [0, 3, 5, 7]


@pytest.mark.parametrize("policy, value", [("zero", 0.0), ("one", 1.0), ("drop", np.nan)])
def test_no_relevant_policy(policy, value):
    out = per_query(POLICY_SCORES, POLICY_LABELS, POLICY_OFFSETS, ALL_METRICS, no_relevant=policy)
    for name in ALL_METRICS:
        np.testing.assert_equal(out[name][0], value, err_msg=name)
    # query 1 (all relevant) is well defined: perfect by every metric, whatever the policy
    assert out["ndcg"][1] == 1.0 and out["map"][1] == 1.0 and out["auc"][1] == 1.0
    # query 2 (ranking labels [1, 0]) does not depend on the policy
    assert out["ndcg"][2] == 1.0 and out["mrr"][2] == 1.0 and out["auc"][2] == 1.0
    assert out["p@2"][2] == 0.5


def test_binary_metrics_follow_rel_threshold_for_no_relevant():
    # labels [1, 0] with threshold 2: no binary-relevant doc, but NDCG/ERR have gain
    out = per_query([0.9, 0.1], [1, 0], [0, 2], ["ndcg", "err", "mrr", "map", "p@1", "auc"],
                    rel_threshold=2, no_relevant="drop")
    assert out["ndcg"][0] == 1.0 and out["err"][0] > 0
    assert np.isnan(out["mrr"][0]) and np.isnan(out["map"][0]) and np.isnan(out["p@1"][0]) and np.isnan(out["auc"][0])


def test_unknown_policy_rejected():
    with pytest.raises(ValueError, match="no_relevant"):
        per_query([0.1], [1.0], [0, 1], ["map"], no_relevant="skip")


# --- names, evaluate, mean_metrics --------------------------------------------------

def test_parse_metric():
    assert parse_metric("ndcg@10") == ("ndcg", 10)
    assert parse_metric("ndcg") == ("ndcg", None)
    assert parse_metric("err") == ("err", None)
    assert parse_metric("err@5") == ("err", 5)
    assert parse_metric("mrr") == ("mrr", None)
    assert parse_metric("map") == ("map", None)
    assert parse_metric("mrr@5") == ("mrr", 5)
    assert parse_metric("p@10") == ("p", 10)
    assert parse_metric("auc") == ("auc", None)


@pytest.mark.parametrize("name", ["foo", "ndcg@0", "ndcg@", "ndcg@x", "p", "map@10", "auc@5", "ndcg@-1", "", "NDCG@10"])
def test_unknown_metric_name(name):
    with pytest.raises(ValueError, match="valid forms: ndcg, ndcg@k, err, err@k, mrr, mrr@k, map, p@k, auc"):
        parse_metric(name)
    with pytest.raises(ValueError, match="unknown metric"):
        per_query([0.1], [1.0], [0, 1], ["map", name])


def test_evaluate_and_mean_metrics():
    data = RankData(
        X=np.zeros((7, 2)), y=np.array(POLICY_LABELS, dtype=float), qid=[30, 30, 30, 10, 10, 20, 20],
        docid=[f"d{i}" for i in range(7)], offsets=POLICY_OFFSETS,
    )
    names = ["ndcg@10", "err", "mrr", "map", "p@10", "auc"]
    df = evaluate(data, POLICY_SCORES, names, no_relevant="drop")
    assert list(df.columns) == ["qid", *names]
    assert df["qid"].tolist() == [30, 10, 20]  # data order, not sorted
    flat = per_query(POLICY_SCORES, POLICY_LABELS, POLICY_OFFSETS, names, no_relevant="drop")
    for name in names:
        np.testing.assert_array_equal(df[name].to_numpy(), flat[name])
    means = mean_metrics(df)
    assert list(means) == names
    assert means["ndcg@10"] == pytest.approx((1.0 + 1.0) / 2)  # query 30 dropped
    assert means["auc"] == pytest.approx(1.0)  # only query 20 is defined
    assert means["p@10"] == pytest.approx((0.2 + 0.1) / 2)


def test_mean_metrics_all_nan_column_is_nan():
    df = pd.DataFrame({"qid": [1, 2], "auc": [np.nan, np.nan], "map": [0.5, np.nan]})
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "mean of empty slice" warning either
        means = mean_metrics(df)
    assert math.isnan(means["auc"]) and means["map"] == 0.5


def test_ranking_top_labels_are_the_padded_columns():
    from rankstudy.evaluation.ranking import rank_flat

    scores, labels, offsets = random_queries(11, n_queries=50, tie_decimals=1)
    ranking = rank_flat(scores, labels, offsets)
    for k in (1, 3, 10, ranking.width):
        top = ranking.top_labels(k)  # before the padded labels exist
        np.testing.assert_array_equal(top, ranking.labels[:, :k])
        np.testing.assert_array_equal(ranking.top_labels(k), top)  # after
    assert ranking.labels.shape == ranking.mask.shape == (50, ranking.width)
    np.testing.assert_array_equal(ranking.mask.sum(axis=1), np.diff(offsets))
    for q in range(50):
        a, b = offsets[q], offsets[q + 1]
        order = np.argsort(-scores[a:b], kind="stable")
        np.testing.assert_array_equal(ranking.flat_scores[a:b], scores[a:b][order])
        np.testing.assert_array_equal(ranking.flat_labels[a:b], labels[a:b][order])
