"""CDN losses (Huang and Frey 2008): values against a naive loop over cliques, the compiled full
topology against the numpy form, gradients (scores and CDN weights) against finite differences for
every topology and both reductions, RankNet / ListNet / ListMLE as special cases equal to the
spine's losses, bounded memory of the full topology."""

from __future__ import annotations

import itertools
import tracemalloc

import numpy as np
import pytest

from losscheck import finite_difference, make_batch, relative_error
from rankstudy.data.blocks import pad
from rankstudy.losses.baseline import listmle, listnet, ranknet
from rankstudy.losses.cdn import _query_loss, cdn, cdn_with_weights, listmle_cdn, listnet_cdn, order_edges
from rankstudy.losses.cdn_numba import full_cdn_query
from rankstudy.losses.registry import check_loss_options

TOPOLOGY_OPTIONS = [{"topology": "full"}, {"topology": "full", "backend": "numpy"}, {"topology": "disconnected"},
                    {"topology": "random", "degree": 2, "n_topologies": 3},
                    {"topology": "full", "reduction": "mean"}, {"topology": "random", "degree": 2, "reduction": "mean"},
                    {"topology": "disconnected", "reduction": "mean"}]


def naive_full(s, y, mask, w1, w2):
    per_query = []
    for q in range(s.shape[0]):
        sq, yq = s[q][mask[q]], y[q][mask[q]]
        edges = [(i, j) for i in range(len(sq)) for j in range(len(sq)) if yq[i] > yq[j]]
        if not edges:
            continue
        r = [sq[i] - sq[j] for i, j in edges]
        per_query.append(sum(np.log(1 + np.exp(-w1 * r[a]) + np.exp(-w2 * r[b]))
                             for a, b in itertools.permutations(range(len(r)), 2)))
    return np.mean(per_query)


@pytest.mark.parametrize("backend", ["numba", "numpy"])
def test_full_topology_equals_a_loop_over_ordered_pairs_of_edges(backend):
    s, y, mask = make_batch(1)
    value, _ = cdn(s, y, mask, topology="full", w1=0.7, w2=1.3, backend=backend, block_elements=50)
    assert value == pytest.approx(naive_full(s, y, mask, 0.7, 1.3), rel=1e-12)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("scale, w1, w2", [(0.3, 0.8, 1.3), (3.0, 5.0, 0.0), (0.01, 40.0, 2.0), (50.0, 30.0, 20.0)],
                         ids=["moderate", "w2=0", "near ties", "huge margins"])
def test_compiled_full_cdn_equals_the_numpy_form(threads, scale, w1, w2):
    """An OHSUMED-shaped query (two thirds irrelevant, 3 grades; 80 documents, ~1,500 edges to
    keep the numpy form fast); margins up to |w r| ~ 3,000 take the kernel's shifted path."""
    rng = np.random.default_rng(7)
    y = rng.choice(3, 80, p=[0.65, 0.2, 0.15]).astype(float)
    heads, tails = order_edges(y)
    s = scale * (rng.normal(size=80) + 0.3 * y)
    r = s[heads] - s[tails]
    ours = full_cdn_query(r, w1, w2, threads=threads)
    ref = _query_loss(r, "full", w1, w2, 1, 1, None, 1 << 16, "numpy")
    assert ours[0] == pytest.approx(ref[0], rel=1e-10)
    np.testing.assert_allclose(ours[1], ref[1], rtol=1e-10, atol=1e-10 * np.abs(ref[1]).max())
    np.testing.assert_allclose(ours[2:], ref[2:], rtol=1e-10, atol=1e-12)


def test_mean_reduction_divides_each_query_by_its_cliques():
    s, y, mask = make_batch(6)
    counts = {"full": lambda E: E * (E - 1), "disconnected": lambda E: E, "random": lambda E: 2 * E}
    checked = 0
    for q in range(s.shape[0]):
        E = len(order_edges(y[q][mask[q]])[0])
        if E < 2:
            continue
        one = (s[q:q + 1], y[q:q + 1], mask[q:q + 1])
        for topology, count in counts.items():
            options = {"topology": topology, "degree": 2, "n_topologies": 3}
            total, grad_total, gw_total = cdn_with_weights(*one, reduction="sum", **options)
            mean, grad_mean, gw_mean = cdn_with_weights(*one, reduction="mean", **options)
            assert mean == pytest.approx(total / count(E), rel=1e-12)
            np.testing.assert_allclose(grad_mean, grad_total / count(E), rtol=1e-12, atol=1e-15)
            np.testing.assert_allclose(gw_mean, gw_total / count(E), rtol=1e-12, atol=1e-15)
            checked += 1
    assert checked >= 9


@pytest.mark.parametrize("options", TOPOLOGY_OPTIONS,
                         ids=lambda o: "-".join(str(v) for k, v in o.items() if k in ("topology", "backend", "reduction")))
@pytest.mark.parametrize("seed", [0, 2])
def test_gradients_match_finite_differences(options, seed):
    s, y, mask = make_batch(seed)
    w1, w2 = 0.8, 1.4
    value, grad, grad_w = cdn_with_weights(s, y, mask, w1=w1, w2=w2, block_elements=64, **options)
    numeric = finite_difference(lambda x: cdn_with_weights(x, y, mask, w1=w1, w2=w2, **options)[0], s)
    assert relative_error(grad, numeric) < 1e-6 and np.all(grad[~mask] == 0)
    h = 1e-6
    numeric_w = [(cdn_with_weights(s, y, mask, w1=w1 + h, w2=w2, **options)[0]
                  - cdn_with_weights(s, y, mask, w1=w1 - h, w2=w2, **options)[0]) / (2 * h),
                 (cdn_with_weights(s, y, mask, w1=w1, w2=w2 + h, **options)[0]
                  - cdn_with_weights(s, y, mask, w1=w1, w2=w2 - h, **options)[0]) / (2 * h)]
    np.testing.assert_allclose(grad_w, numeric_w, rtol=1e-6, atol=1e-9)


def test_blocks_do_not_change_the_full_topology():
    s, y, mask = make_batch(3)
    a = cdn_with_weights(s, y, mask, topology="full", block_elements=7)
    b = cdn_with_weights(s, y, mask, topology="full", block_elements=1 << 20)
    assert a[0] == pytest.approx(b[0], rel=1e-13)
    np.testing.assert_allclose(a[1], b[1], rtol=1e-12, atol=1e-15)


def test_disconnected_logistic_cdn_is_ranknet():
    s, y, mask = make_batch(4)
    ours, theirs = cdn(s, y, mask, topology="disconnected", w1=1.0), ranknet(s, y, mask)
    assert ours[0] == pytest.approx(theirs[0], abs=1e-10)
    np.testing.assert_allclose(ours[1], theirs[1], atol=1e-10)


def test_listmle_and_listnet_are_cdns():
    for seed in range(3):
        s, y, mask = make_batch(seed)
        for ours, theirs in [(listmle_cdn(s, y, mask, seed=seed), listmle(s, y, mask, seed=seed)),
                             (listnet_cdn(s, y, mask), listnet(s, y, mask))]:
            assert ours[0] == pytest.approx(theirs[0], abs=1e-10)
            np.testing.assert_allclose(ours[1], theirs[1], atol=1e-10)


def test_random_topologies_are_seeded_and_averaging_is_a_mean():
    s, y, mask = make_batch(5)
    one = [cdn(s, y, mask, topology="random", degree=2, seed=k)[0] for k in range(3)]
    assert cdn(s, y, mask, topology="random", degree=2, seed=1)[0] == one[1]  # reproducible
    assert len(set(one)) == 3
    averaged = cdn(s, y, mask, topology="random", degree=2, n_topologies=4, seed=0)[0]
    assert min(one) * 0.5 < averaged < max(one) * 1.5


def test_a_150_document_query_stays_in_bounded_memory():
    """Graded labels 0..4 give ~8,000 edges, ~64 million cliques: never held at once."""
    rng = np.random.default_rng(0)
    s, mask = pad(rng.normal(size=150), np.array([0, 150]))
    y, _ = pad(rng.integers(0, 5, 150).astype(float), np.array([0, 150]))
    tracemalloc.start()
    value, grad = cdn(s, y, mask, topology="full", block_elements=1 << 16)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert np.isfinite(value) and np.isfinite(grad).all()
    assert peak < 64 * 2**20, peak


@pytest.mark.parametrize("options,match", [
    ({"topology": "ring"}, "unknown topology 'ring'"),
    ({"w1": -0.1}, "w1 must be a number >= 0"),
    ({"w2": -1}, "w2 must be a number >= 0"),
    ({"topology": "random", "degree": 0}, "degree must be an integer >= 1"),
    ({"n_topologies": 0}, "n_topologies must be an integer >= 1"),
    ({"reduction": "max"}, "unknown reduction 'max'"),
    ({"backend": "cuda"}, "unknown backend 'cuda'"),
])
def test_checks(options, match):
    # by the declaration, before any job, without calling the loss (whose first call compiles numba)
    with pytest.raises(ValueError, match=match):
        check_loss_options("cdn", options)
