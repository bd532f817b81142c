"""Structural-SVM losses: every loss-augmented inference equals brute-force enumeration of all
rankings (or all pair labelings for AUC) on small queries, for random scores; the losses'
gradients match finite differences; combos, padding and checks."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from losscheck import finite_difference, make_batch, relative_error
from rankstudy.losses import inference
from rankstudy.losses.registry import LOSSES, check_loss_options
from rankstudy.losses.structured import structured_hinges, svm_combo
from structured_reference import ap_delta, decay, ndcg_delta, po_difference

STRUCTURED = ["svm_auc", "svm_map", "svm_ndcg", "svm_ndcg_nc", "svm_mrr", "svm_mrr_po", "dorm", "svm_combo"]


def random_query(rng, n):
    z = np.zeros(n, dtype=bool)
    z[rng.choice(n, rng.integers(1, n), replace=False)] = True  # at least one good and one bad
    return rng.normal(0.0, rng.choice([0.1, 1.0, 5.0]), n), z


def brute(criterion, s, z, k=None, cut=None):
    n = len(s)
    best = -np.inf
    if criterion == "dorm":
        # phi(y*) averaged over every order with the goods first: enumerated, not closed-form
        ideal_orders = [p for p in itertools.permutations(range(n)) if z[list(p)[: z.sum()]].all()]
        a_star = np.mean([[decay(p.index(i), cut) for i in range(n)] for p in ideal_orders], axis=0)
    if criterion == "auc":
        g, b = np.flatnonzero(z), np.flatnonzero(~z)
        pairs = [(i, j) for i in g for j in b]
        for flips in itertools.product([False, True], repeat=len(pairs)):
            value = sum(1.0 + 2.0 * (s[j] - s[i]) for (i, j), f in zip(pairs, flips) if f) / len(pairs)
            best = max(best, value)
        return best
    for perm in itertools.permutations(range(n)):
        rank = np.empty(n, dtype=int)
        rank[list(perm)] = np.arange(n)
        if criterion == "map":
            value = ap_delta(z, rank) - po_difference(s, z, rank)
        elif criterion in ("ndcg", "ndcg_nc"):
            value = ndcg_delta(z, rank, k) - po_difference(s, z, rank)
        elif criterion == "mrr":
            first = rank[z].min()
            g0 = np.flatnonzero(z)[np.argmin(rank[z])]
            before = np.flatnonzero(~z & (rank < first))
            value = (1.0 - 1.0 / (1 + first) if first < k else 1.0) + (s[before] - s[g0]).sum()
        elif criterion == "mrr_po":
            first = rank[z].min()
            value = (1.0 - 1.0 / (1 + first) if first < k else 1.0) - po_difference(s, z, rank)
        elif criterion == "dorm":
            value = ndcg_delta(z, rank, k) + sum(s[i] * (decay(rank[i], cut) - a_star[i]) for i in range(n))
        best = max(best, value)
    return best


CRITERIA_SEEDS = {"auc": 1, "map": 2, "ndcg": 3, "ndcg_nc": 4, "mrr": 5, "mrr_po": 7, "dorm": 6}
CASES = [("auc", {}), ("map", {}), ("ndcg", {"k": 3}), ("ndcg", {"k": 10}), ("ndcg_nc", {}),
         ("mrr", {"k": 2}), ("mrr", {"k": 4}), ("mrr_po", {"k": 2}), ("mrr_po", {"k": 10}), ("dorm", {"k": 4}), ("dorm", {"k": 3, "cut": 2})]


def run(criterion, s, z, k=None, cut=None):
    if criterion == "auc":
        return inference.auc_po(s, z)
    if criterion == "map":
        return inference.map_po(s, z)
    if criterion == "ndcg":
        return inference.ndcg_po(s, z, k)
    if criterion == "ndcg_nc":
        return inference.ndcg_po(s, z, None)
    if criterion == "mrr":
        return inference.mrr_mrr(s, z, k)
    if criterion == "mrr_po":
        return inference.mrr_po(s, z, k)
    return inference.ndcg_dorm(s, z, k, cut)


@pytest.mark.parametrize("criterion,options", CASES, ids=[f"{c}{o}" for c, o in CASES])
def test_inference_equals_brute_force(criterion, options):
    rng = np.random.default_rng([CRITERIA_SEEDS[criterion], len(options)])
    for trial in range(40):
        n = int(rng.integers(2, 7 if criterion == "auc" else 8))
        s, z = random_query(rng, n)
        if trial % 5 == 0:
            s = np.round(s, 1)  # ties
        if trial % 5 == 1:
            s = np.round(2.0 * s) / 2.0  # differences of exactly 1/2: SVMauc's threshold
        value, coef = run(criterion, s, z, **options)
        expected = brute(criterion, s, z, **options)
        assert value == pytest.approx(expected, abs=1e-10), (criterion, options, s, z)
        assert value >= -1e-12  # y* itself has H = 0


def brute_latent(criterion, s, z, anchor, k=None, cut=None):
    """The latent hinges by enumeration. DORM: max_y [Delta + s.A(y)] - s.A(y*), y* the goods-first
    order the anchor scores highest; with anchor = s that is max over all goods-first orders of
    s.A(y*). MRR: the best y whose first good is the anchor's top good (the first on ties)."""
    n = len(s)
    goods = np.flatnonzero(z)
    best = -np.inf
    if criterion == "dorm":
        ideal = [np.array([decay(p.index(i), cut) for i in range(n)])
                 for p in itertools.permutations(range(n)) if z[list(p)[: z.sum()]].all()]
        a_star = max(ideal, key=lambda a: anchor @ a)  # unique for an anchor without ties
        target = max(s @ a for a in ideal) if anchor is s else s @ a_star
    g_a = goods[np.argmax(anchor[goods])]
    for perm in itertools.permutations(range(n)):
        rank = np.empty(n, dtype=int)
        rank[list(perm)] = np.arange(n)
        if criterion == "dorm":
            value = ndcg_delta(z, rank, k) + sum(s[i] * decay(rank[i], cut) for i in range(n)) - target
        else:
            first = rank[z].min()
            if rank[g_a] != first:
                continue
            before = np.flatnonzero(~z & (rank < first))
            value = (1.0 - 1.0 / (1 + first) if first < k else 1.0) + (s[before] - s[g_a]).sum()
        best = max(best, value)
    return best


LATENT_CASES = [("mrr", {"k": 2}), ("mrr", {"k": 4}), ("dorm", {"k": 4}), ("dorm", {"k": 3, "cut": 2})]


@pytest.mark.parametrize("criterion,options", LATENT_CASES, ids=[f"{c}{o}" for c, o in LATENT_CASES])
def test_latent_inference_equals_brute_force(criterion, options):
    """With anchor = s the latent hinge (target chosen by the scores); with another anchor the
    convex bound (target fixed by the anchor), which is >= the latent hinge, equal at anchor = s."""
    rng = np.random.default_rng([CRITERIA_SEEDS[criterion], len(options), 1])
    routine = inference.mrr_mrr if criterion == "mrr" else (lambda s, z, k, a: inference.ndcg_dorm(s, z, k, options.get("cut"), a))
    for trial in range(30):
        n = int(rng.integers(2, 7))
        s, z = random_query(rng, n)
        if trial % 3 == 0:
            s = np.round(s, 1)  # ties
        latent, coef = routine(s, z, options["k"], s)
        assert latent == pytest.approx(brute_latent(criterion, s, z, s, **options), abs=1e-10), (s, z)
        assert -1e-12 <= latent + s @ coef <= 1.0 + 1e-12  # H = Delta - s . coef, Delta in [0, 1]
        assert latent >= -1e-12
        anchor = rng.normal(size=n)  # no ties
        bound, coef = routine(s, z, options["k"], anchor)
        assert bound == pytest.approx(brute_latent(criterion, s, z, anchor, **options), abs=1e-10), (s, z, anchor)
        assert bound >= latent - 1e-12
        assert -1e-12 <= bound + s @ coef <= 1.0 + 1e-12


@pytest.mark.parametrize("criterion", ["mrr", "dorm"])
def test_latent_hinge_bounds_the_loss_of_the_score_ranking(criterion):
    """The latent hinge is >= Delta of the ranking by score (so training it bounds the training
    loss), on long queries with many goods."""
    rng = np.random.default_rng(11)
    k = 10
    for _ in range(20):
        n = int(rng.integers(40, 160))
        s = rng.normal(size=n)
        z = rng.random(n) < 0.35
        z[:2] = [True, False]
        rank = np.empty(n, dtype=int)
        rank[np.argsort(-s)] = np.arange(n)
        if criterion == "mrr":
            value, _ = inference.mrr_mrr(s, z, k, s)
            first = rank[z].min()
            delta = 1.0 - 1.0 / (1 + first) if first < k else 1.0
        else:
            value, _ = inference.ndcg_dorm(s, z, k, 30, s)
            delta = ndcg_delta(z, rank, k)
        assert value >= delta - 1e-12


def test_ndcg_with_a_clip_beyond_the_list_equals_no_clip():
    rng = np.random.default_rng(3)
    for _ in range(20):
        s, z = random_query(rng, 9)
        clipped, coef_c = inference.ndcg_po(s, z, 50)
        unclipped, coef_u = inference.ndcg_po(s, z, None)
        assert clipped == pytest.approx(unclipped, abs=1e-12)


def test_ndcg_region_on_long_queries_matches_the_full_table():
    """With many bads, the folded region b >= k must give the same optimum as the full DP."""
    rng = np.random.default_rng(5)
    for _ in range(30):
        n = int(rng.integers(20, 60))
        s, z = random_query(rng, n)
        k = int(rng.integers(2, 8))
        fast, coef = inference.ndcg_po(s, z, k)
        # the full table over b in 0..n- with D cut at k
        q = inference.Sorted.of(s, z)
        d = inference.paper_discount(n, k)
        ideal, scale = d[: len(q.good)].sum(), 2.0 / (len(q.good) * len(q.bad))
        value, _ = inference._monotone_dp(
            lambda i, b: -d[i + b] / ideal + scale * (q.prefix_bad[b] - b * q.s_good[i]), len(q.good), len(q.bad) + 1)
        assert fast == pytest.approx(1.0 + value, abs=1e-10)
        # and the coefficients reproduce the value: H = Delta - s . coef with Delta in [0, 1]
        assert 0.0 <= fast + s @ coef <= 1.0 + 1e-12


@pytest.mark.parametrize("name", STRUCTURED)
@pytest.mark.parametrize("seed", [0, 1])
def test_structured_loss_gradient_matches_finite_differences(name, seed):
    s, y, mask = make_batch(seed)
    fn = LOSSES[name]
    value, grad = fn(s, y, mask)
    assert value > 0 and np.abs(grad).max() > 0
    numeric = finite_difference(lambda x: fn(x, y, mask)[0], s)
    assert relative_error(grad, numeric) < 1e-5
    assert np.all(grad[~mask] == 0)


@pytest.mark.parametrize("name", STRUCTURED)
def test_padding_content_changes_nothing(name):
    s, y, mask = make_batch(3)
    value, grad = LOSSES[name](s, y, mask)
    s2, y2 = s.copy(), y.copy()
    s2[~mask], y2[~mask] = 1e6, 4.0
    value2, grad2 = LOSSES[name](s2, y2, mask)
    assert value2 == value
    np.testing.assert_array_equal(grad2, grad)


def test_combo_shared_takes_the_largest_hinge_and_separate_their_sum():
    s, y, mask = make_batch(4)
    criteria = ("map", "mrr", "ndcg")
    hinge, _, active = structured_hinges(s, y, mask, criteria)
    shared, _ = svm_combo(s, y, mask, criteria=criteria, slacks="shared")
    separate, _ = svm_combo(s, y, mask, criteria=criteria, slacks="separate")
    assert shared == pytest.approx(hinge.max(axis=0)[active].mean())
    assert separate == pytest.approx(hinge.sum(axis=0)[active].mean())
    assert separate >= shared


def test_perfect_scores_with_a_margin_have_no_violation():
    """Goods scored far above bads: y* is the argmax for every criterion (H = 0)."""
    y = np.array([[2.0, 1.0, 0.0, 0.0, 0.0, 1.0]])
    s = 100.0 * (y >= 1)
    mask = np.ones_like(y, dtype=bool)
    for name in STRUCTURED:
        assert LOSSES[name](s, y, mask)[0] == pytest.approx(0.0, abs=1e-12), name
    # the literal DORM's y* is the average goods-first order: a score-sorted one beats it, so H > 0
    assert LOSSES["dorm"](s + np.arange(6.0), y, mask, latent=False)[0] > 0


def test_queries_without_a_good_or_a_bad_document_have_no_term():
    s = np.array([[0.3, 0.1, -0.2], [1.0, 2.0, 0.0]])
    y = np.array([[1.0, 0.0, 2.0], [0.0, 0.0, 0.0]])
    mask = np.ones_like(s, dtype=bool)
    for name in STRUCTURED:
        value, grad = LOSSES[name](s, y, mask)
        alone, _ = LOSSES[name](s[:1], y[:1], mask[:1])
        assert value == pytest.approx(alone) and np.all(grad[1] == 0), name


@pytest.mark.parametrize("loss,options,match", [
    ("svm_ndcg", {"k": 0}, "k must be an integer >= 1"),
    ("dorm", {"cut": 0}, "cut must be an integer >= 1 or null"),
    ("svm_mrr", {"latent": "yes"}, "latent must be true or false"),
    ("svm_combo", {"criteria": ["map", "nope"]}, "criteria must be a non-empty list of distinct names of auc, map"),
    ("svm_combo", {"criteria": ["map", "map"]}, "criteria must be a non-empty list of distinct"),
    ("svm_combo", {"criteria": []}, "criteria must be a non-empty list"),
    ("svm_combo", {"slacks": "some"}, "unknown slacks 'some'"),
])
def test_checks(loss, options, match):
    with pytest.raises(ValueError, match=match):  # by the declaration, before any job
        check_loss_options(loss, options)
    check_loss_options("svm_combo", {"criteria": ("map", "mrr")})  # a tuple, as its default is
