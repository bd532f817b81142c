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
    assert conventions.moves("map") == ["ours", "relevant = label 2"]
    assert conventions.moves("err@10") == ["ours"]
