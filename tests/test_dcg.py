"""The one metric core (rankstudy.evaluation.dcg): its discounts and ideal DCG against per-query
loops of the formulas, LETOR's conventions as parameters of the one NDCG (the conventions module
computes exactly the metric's NDCG), and one approximate rank pi for ApproxNDCG and smoothed NDCG."""

from __future__ import annotations

import numpy as np
import pytest

from rankstudy.data.blocks import pad
from rankstudy.evaluation import conventions, dcg, metrics
from rankstudy.losses import approx_rank, inference, listwise, smoothed


def random_queries(seed: int, integer: bool = True):
    rng = np.random.default_rng(seed)
    lengths = np.concatenate([rng.integers(1, 40, 60), [1, 2, 90]])
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    labels = rng.choice([0.0, 0.0, 1.0, 2.0, 3.0], offsets[-1])
    if not integer:
        labels = labels + rng.uniform(0.0, 0.9, offsets[-1])
    labels[offsets[4]:offsets[5]] = 0.0  # a query without a relevant document
    return np.round(rng.normal(size=offsets[-1]), 1), labels, offsets  # rounded: ties


def loop_discount(rank: int, kind: str) -> float:
    return (1.0 if rank <= 2 else 1.0 / np.log2(rank)) if kind == "jarvelin" else 1.0 / np.log2(1 + rank)


@pytest.mark.parametrize("kind", dcg.DISCOUNTS)
@pytest.mark.parametrize("k", [None, 1, 3, 50])
def test_discounts_are_the_formula_cut_at_k(kind, k):
    table = dcg.discounts(20, kind, k)
    expected = [loop_discount(r, kind) if k is None or r <= k else 0.0 for r in range(1, 21)]
    np.testing.assert_allclose(table, expected, rtol=1e-15, atol=0)
    # the structural SVMs' D(r) is this table, Jarvelin's discount of the 1-based rank r + 1
    if kind == "jarvelin":
        assert np.array_equal(inference.paper_discount(20, k), table)


@pytest.mark.parametrize("gain", dcg.GAINS)
@pytest.mark.parametrize("integer", [True, False])  # grade counting, or the partition for any labels
@pytest.mark.parametrize("depth", [1, 5, 200])
def test_ideal_dcg_is_the_dcg_of_the_sorted_gains(gain, integer, depth):
    _, labels, offsets = random_queries(1, integer)
    d = dcg.discounts(min(depth, int(np.diff(offsets).max())))
    got = dcg.ideal_dcg_flat(labels, offsets, d, gain, rel_threshold=1.5)
    expected = []
    for q in range(len(offsets) - 1):
        g = np.sort(dcg.gain(labels[offsets[q]:offsets[q + 1]], gain, 1.5))[::-1][:depth]
        expected.append(sum(v * loop_discount(r, "log2") for r, v in enumerate(g, start=1)))
    np.testing.assert_allclose(got, expected, rtol=1e-13, atol=1e-13)
    # the padded form, used by the losses
    Y, M = pad(labels, offsets)
    np.testing.assert_array_equal(dcg.ideal_dcg(Y, M, depth, gain, rel_threshold=1.5), got)


@pytest.mark.parametrize("name", [*conventions.NAMED, *conventions.VARIANTS])
@pytest.mark.parametrize("metric", ["ndcg@1", "ndcg@10", "ndcg"])
def test_a_convention_is_the_one_ndcg_with_parameters(name, metric):
    """conventions.per_query computes no NDCG of its own: under any convention it is exactly
    (bit for bit) metrics.ndcg with the convention's keys as parameters, after the tie order."""
    scores, labels, offsets = random_queries(2)
    labels = np.minimum(labels, 2.0)  # LETOR's conventions define labels 0..2
    c = conventions.resolve(conventions.NAMED.get(name) or conventions.VARIANTS[name])
    order = conventions.tie_order(scores, labels, offsets, c["ties"])
    S, M = pad(scores[order], offsets)
    Y, _ = pad(labels[order], offsets)
    k = metrics.parse_metric(metric)[1]
    expected = metrics.ndcg(S, Y, M, k=k, **{key: c[key] for key in conventions.NDCG_PARAMETERS})
    assert np.array_equal(conventions.per_query(scores, labels, offsets, metric, c), expected)
    if name == "ours":  # and our convention is the pipeline's metric
        assert np.array_equal(expected, metrics.per_query(scores, labels, offsets, [metric])[metric])


def test_the_short_query_rule_and_the_no_relevant_policy_are_parameters():
    scores, labels = np.array([3.0, 2.0, 1.0, 1.0, 0.0]), np.array([0.0, 2.0, 1.0, 0.0, 0.0])
    offsets = np.array([0, 3, 5])
    S, M = pad(scores, offsets)
    Y, _ = pad(labels, offsets)
    ours = metrics.ndcg(S, Y, M, k=5)
    assert ours[0] == pytest.approx((3 / np.log2(3) + 1 / 2) / (3 + 1 / np.log2(3))) and ours[1] == 0.0
    letor = metrics.ndcg(S, Y, M, k=5, short_query="zero", discount="jarvelin")
    assert list(letor) == [0.0, 0.0]  # fewer than 5 documents: LETOR's scripts give 0
    assert np.isnan(metrics.ndcg(S, Y, M, k=2, no_relevant="drop")[1])
    assert metrics.ndcg(S, Y, M, k=2, short_query="zero", no_relevant="one")[1] == 1.0  # 2 documents: not short


def test_approx_ndcg_and_smoothed_ndcg_share_one_pi():
    assert listwise.approx_ranks is smoothed.approx_ranks is approx_rank.approx_ranks
    assert listwise.approx_ranks_vjp is smoothed.approx_ranks_vjp is approx_rank.approx_ranks_vjp
    rng = np.random.default_rng(3)
    s, mask = rng.normal(size=(3, 6)), np.ones((3, 6), dtype=bool)
    mask[1, 4:] = False
    active = np.array([True, True, False])
    pi = approx_rank.approx_ranks(s, mask, active, 0.7, block_elements=7)
    for q in range(3):
        for i in range(6):
            others = [j for j in range(6) if j != i and mask[q, j]]
            sigma = sum(1 / (1 + np.exp(-(s[q, j] - s[q, i]) / 0.7)) for j in others)
            assert pi[q, i] == pytest.approx(1 + sigma if active[q] and mask[q, i] else 1.0, rel=1e-14)
