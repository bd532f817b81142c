"""Evaluation conventions (rankstudy.evaluation.conventions) against independent references:
ranx for NDCG with linear gains and for a relevance level of 2, a per-query loop of
Jarvelin and Kekalainen's formula for their discount and for binary gains."""

import warnings

import numpy as np
import pytest

from rankstudy.evaluation import conventions, metrics


def random_queries(seed: int):
    rng = np.random.default_rng(seed)
    lengths = np.concatenate([rng.integers(1, 60, 80), [1, 1, 2, 150]])
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    labels = rng.choice([0.0, 0.0, 1.0, 2.0], offsets[-1])
    labels[offsets[3]:offsets[4]] = 0.0  # a query without a relevant document
    scores = rng.normal(size=offsets[-1])  # continuous: no ties
    return scores, labels, offsets


def loop_ndcg(scores, labels, offsets, k, gain, discount):
    out = []
    for q in range(len(offsets) - 1):
        s, y = scores[offsets[q]:offsets[q + 1]], labels[offsets[q]:offsets[q + 1]]
        g = {"exp": 2.0 ** y - 1, "linear": y, "binary": (y >= 1).astype(float)}[gain]

        def dcg(values):
            total = 0.0
            for rank, v in enumerate(values[:k], start=1):
                d = (1.0 if rank < 2 else 1.0 / np.log2(rank)) if discount == "jarvelin" else 1.0 / np.log2(1 + rank)
                total += v * d
            return total

        ideal = dcg(sorted(g, reverse=True))
        out.append(dcg(g[np.argsort(-s, kind="stable")]) / ideal if ideal > 0 else 0.0)
    return np.array(out)


@pytest.mark.parametrize("gain", ["exp", "linear", "binary"])
@pytest.mark.parametrize("discount", ["log2", "jarvelin"])
@pytest.mark.parametrize("k", [1, 2, 3, 10])
def test_ndcg_matches_a_loop_of_the_formula(gain, discount, k):
    scores, labels, offsets = random_queries(1)
    ours = conventions.per_query(scores, labels, offsets, f"ndcg@{k}", {"gain": gain, "discount": discount})
    np.testing.assert_allclose(ours, loop_ndcg(scores, labels, offsets, k, gain, discount), rtol=0, atol=1e-12)


def test_the_default_convention_is_the_pipelines_metric():
    scores, labels, offsets = random_queries(2)
    for name in ["ndcg@1", "ndcg@10", "ndcg", "map", "mrr@10", "p@5"]:
        np.testing.assert_allclose(conventions.per_query(scores, labels, offsets, name, {}),
                                   metrics.per_query(scores, labels, offsets, [name])[name], rtol=0, atol=1e-12)


# on one worker with the other tests that call ranx: its numba kernels compile in the first
# process that calls them (30-50 s in a fresh environment) and are reused in that process
@pytest.mark.xdist_group("ranx")
def test_linear_gain_and_level_two_match_ranx():
    import ranx
    scores, labels, offsets = random_queries(3)
    qids = [f"q{q}" for q in range(len(offsets) - 1)]
    slices = [slice(offsets[q], offsets[q + 1]) for q in range(len(qids))]
    qrels = ranx.Qrels({qid: {f"d{j}": int(labels[s][j]) for j in range(s.stop - s.start)}
                        for qid, s in zip(qids, slices)})
    run = ranx.Run({qid: {f"d{j}": float(scores[s][j]) for j in range(s.stop - s.start)}
                    for qid, s in zip(qids, slices)})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ranx.evaluate(qrels, run, ["ndcg@10", "map-l2"], return_mean=False)
    ndcg = conventions.per_query(scores, labels, offsets, "ndcg@10", conventions.VARIANTS["gain r"])
    ap = conventions.per_query(scores, labels, offsets, "map", conventions.VARIANTS["relevant = label 2"])
    np.testing.assert_allclose(ndcg, [run.scores["ndcg@10"][q] for q in qids], rtol=0, atol=1e-9)
    np.testing.assert_allclose(ap, [run.scores["map-l2"][q] for q in qids], rtol=0, atol=1e-9)


def test_the_jarvelin_discount_gives_rank_two_full_credit():
    # one relevant document at rank 2: 1/log2(3) with ours, 1 with Jarvelin's discount
    scores, labels, offsets = np.array([2.0, 1.0, 0.0]), np.array([0.0, 1.0, 0.0]), np.array([0, 3])
    assert conventions.per_query(scores, labels, offsets, "ndcg@10", {}) == pytest.approx(1 / np.log2(3))
    assert conventions.per_query(scores, labels, offsets, "ndcg@10", {"discount": "jarvelin"}) == pytest.approx(1.0)


def test_unknown_keys_and_values_are_named():
    with pytest.raises(ValueError, match="unknown key.*'gian'"):
        conventions.resolve({"gian": "exp"})
    with pytest.raises(ValueError, match="discount 'log10'"):
        conventions.resolve({"discount": "log10"})


def test_which_variants_move_which_metric():
    assert "binary gain" in conventions.moves("ndcg@10") and "relevant = label 2" not in conventions.moves("ndcg@10")
    assert "ties: relevant last" in conventions.moves("ndcg@10")
    assert conventions.moves("map") == ["ours", "relevant = label 2", "ties: relevant last", "ties: relevant first"]
    assert conventions.moves("err@10") == ["ours", "ties: relevant last", "ties: relevant first"]


def loop_tied(scores, labels, offsets, metric_of_order, ties):
    """Per query: the metric of the order a loop builds, ties broken as ``ties`` says."""
    out = []
    for q in range(len(offsets) - 1):
        s, y = scores[offsets[q]:offsets[q + 1]], labels[offsets[q]:offsets[q + 1]]
        tie = {"file": np.zeros(len(y)), "pessimistic": y, "optimistic": -y}[ties]
        order = sorted(range(len(y)), key=lambda i: (-s[i], tie[i], i))
        out.append(metric_of_order(y[order]))
    return np.array(out)


def average_precision(y):
    hits = np.cumsum(y >= 1)
    return float(np.sum((y >= 1) * hits / np.arange(1, len(y) + 1)) / max(1, (y >= 1).sum()))


@pytest.mark.parametrize("ties", ["file", "pessimistic", "optimistic"])
def test_ties_are_broken_as_the_convention_says(ties):
    scores, labels, offsets = random_queries(5)
    scores = np.round(scores)  # few distinct scores: many ties
    ours = conventions.per_query(scores, labels, offsets, "map", {"ties": ties})
    relevant = np.add.reduceat((labels >= 1).astype(int), offsets[:-1])
    expected = loop_tied(scores, labels, offsets, average_precision, ties)
    np.testing.assert_allclose(ours[relevant > 0], expected[relevant > 0], rtol=0, atol=1e-12)
    k = 10
    dcg = lambda g: float(np.sum(g[:k] / np.log2(np.arange(2, min(k, len(g)) + 2))))
    ndcg = lambda y: dcg(2.0 ** y - 1) / dcg(np.sort(2.0 ** y - 1)[::-1]) if y.max() > 0 else 0.0
    np.testing.assert_allclose(conventions.per_query(scores, labels, offsets, "ndcg@10", {"ties": ties}),
                               loop_tied(scores, labels, offsets, ndcg, ties), rtol=0, atol=1e-12)
    worst = conventions.per_query(scores, labels, offsets, "ndcg@10", {"ties": "pessimistic"})
    best = conventions.per_query(scores, labels, offsets, "ndcg@10", {"ties": "optimistic"})
    assert np.all(worst <= best + 1e-12) and np.any(worst < best)


def test_the_ideal_dcg_over_all_documents():
    scores, labels, offsets = random_queries(6)
    k = 5
    dcg = lambda g, depth: float(np.sum(g[:depth] / np.log2(np.arange(2, min(depth, len(g)) + 2))))
    ndcg_all = lambda y: dcg(2.0 ** y - 1, k) / dcg(np.sort(2.0 ** y - 1)[::-1], len(y)) if y.max() > 0 else 0.0
    ours = conventions.per_query(scores, labels, offsets, "ndcg@5", {"ideal": "all"})
    np.testing.assert_allclose(ours, loop_tied(scores, labels, offsets, ndcg_all, "file"), rtol=0, atol=1e-12)
    assert np.all(ours <= conventions.per_query(scores, labels, offsets, "ndcg@5", {}) + 1e-12)
    with pytest.raises(ValueError, match="ties 'random'"):
        conventions.resolve({"ties": "random"})
