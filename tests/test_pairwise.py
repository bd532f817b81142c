"""Tran et al.'s weighted pairwise losses (l4) and WUB: gradients vs finite differences,
values vs per-query loops written from the definitions, hand-worked values, the exact MRF
bound, RankNet identity, padding, chunking, bounded memory and a learning check."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy.optimize import minimize

from rankstudy.data.blocks import pad
from rankstudy.losses.padded import plackett_luce_order
from rankstudy.losses.baseline import ranknet
from rankstudy.evaluation.metrics import per_query
from rankstudy.losses.pairwise import PAIR_WEIGHTS, PHIS, WUB_WEIGHTS, pairwise_loss, wub
from rankstudy.losses.registry import LOSSES, check_loss_options
from rankstudy.scorers.linear import LinearScorer
from rankstudy.solvers.objective import Objective
from losscheck import finite_difference, linear_signal_data, make_batch, peak_bytes, relative_error


def strict_pair_differences(s, y, mask):
    return np.concatenate([
        (s[q][:, None] - s[q][None, :])[(y[q][:, None] > y[q][None, :]) & mask[q][:, None] & mask[q][None, :]]
        for q in range(s.shape[0])])


# --------------------------------------------------------------------------- naive references

PHI_FORMULAS = {
    "quadratic": lambda d: (1 - d) ** 2,
    "hinge": lambda d: max(0.0, 1 - d),
    "exponential": lambda d: math.exp(-d),
    "logistic": lambda d: math.log1p(math.exp(-d)),
}

# (r_i, r_j, R_i, R_j, eta_i, eta_j, N_q, NDCG_max) -> V_ij, for r_i > r_j
WEIGHT_FORMULAS = {
    "unit": lambda ri, rj, Ri, Rj, ei, ej, n, idcg: 1.0,
    "inv_n": lambda ri, rj, Ri, Rj, ei, ej, n, idcg: 1 / n,
    "label_diff": lambda ri, rj, Ri, Rj, ei, ej, n, idcg: abs(ri - rj),
    "label_diff_n": lambda ri, rj, Ri, Rj, ei, ej, n, idcg: abs(ri - rj) / n,
    "ndcg_swap": lambda ri, rj, Ri, Rj, ei, ej, n, idcg: (Ri - Rj) * (ei - ej) / idcg,
    "gain_pos": lambda ri, rj, Ri, Rj, ei, ej, n, idcg: (Ri - Rj) * (ei - ej),
    "gain_diff": lambda ri, rj, Ri, Rj, ei, ej, n, idcg: Ri - Rj,
    "gain_diff_n": lambda ri, rj, Ri, Rj, ei, ej, n, idcg: (Ri - Rj) / n,
    "exp_label_diff_n": lambda ri, rj, Ri, Rj, ei, ej, n, idcg: abs(2 ** (ri - 1) - 2 ** (rj - 1)) / n,
}


def per_query_context(y, mask, q, n_levels, seed):
    """Real columns, R, eta (log2, 1-based label-sorted position) and NDCG_max of query q."""
    cols = np.flatnonzero(mask[q])
    order = plackett_luce_order(y, mask, seed)[q][: len(cols)]
    eta = {int(c): 1 / math.log2(1 + k + 1) for k, c in enumerate(order)}
    R = {int(c): (2 ** y[q, c] - 1) / 2 ** (n_levels - 1) for c in cols}
    idcg = sum((2 ** y[q, c] - 1) * eta[int(c)] for c in cols)
    return cols, R, eta, idcg


def reference_pairwise(s, y, mask, phi, weight, n_levels=None, seed=0):
    n_levels = n_levels or int(y[mask].max()) + 1
    per_q = []
    for q in range(s.shape[0]):
        cols, R, eta, idcg = per_query_context(y, mask, q, n_levels, seed)
        terms = [WEIGHT_FORMULAS[weight](y[q, i], y[q, j], R[i], R[j], eta[i], eta[j], len(cols), idcg)
                 * PHI_FORMULAS[phi](s[q, i] - s[q, j])
                 for i in cols for j in cols if y[q, i] > y[q, j]]
        if terms:
            per_q.append(sum(terms))
    return float(np.mean(per_q)) if per_q else 0.0


def reference_wub(s, y, mask, weight="unit", gamma=1.0, n_levels=None, seed=0):
    """-sum_{i<j} W_ij log Q(r_i, r_j), Q = psi / sum over the |L|^2 label states of psi."""
    n_levels = n_levels or int(y[mask].max()) + 1
    per_q = []
    for q in range(s.shape[0]):
        cols, R, eta, idcg = per_query_context(y, mask, q, n_levels, seed)
        n = len(cols)
        if n < 2:
            continue
        g = 2 / (n * (n - 1)) if gamma == "inv_pairs" else gamma
        total = 0.0
        for i, j in itertools.combinations(cols, 2):
            d = s[q, i] - s[q, j]
            log_psi = lambda a, b: g * np.sign(a - b) * d
            log_z = math.log(sum(math.exp(log_psi(a, b)) for a in range(n_levels) for b in range(n_levels)))
            w = {"unit": 1.0, "inv_n": 1 / n, "pos_diff": abs(eta[i] - eta[j])}[weight]
            total += w * (log_z - log_psi(y[q, i], y[q, j]))
        per_q.append(total)
    return float(np.mean(per_q)) if per_q else 0.0


# --------------------------------------------------------------------------- gradients and values

ALL_COMBINATIONS = list(itertools.product(sorted(PHIS), sorted(PAIR_WEIGHTS)))


@pytest.mark.parametrize("phi,weight", ALL_COMBINATIONS)
def test_pairwise_gradient_matches_finite_differences(phi, weight):
    s, y, mask = make_batch(0)
    # the hinge has a kink at d = 1: the check must not straddle it
    assert np.abs(1 - strict_pair_differences(s, y, mask)).min() > 1e-3
    fn = lambda x: pairwise_loss(x, y, mask, phi=phi, weight=weight)
    value, grad = fn(s)
    numeric = finite_difference(lambda x: fn(x)[0], s)
    assert np.abs(grad).max() > 0
    assert relative_error(grad, numeric) < 1e-5
    assert np.all(grad[~mask] == 0)


@pytest.mark.parametrize("phi,weight", ALL_COMBINATIONS)
def test_pairwise_value_matches_naive_loop(phi, weight):
    s, y, mask = make_batch(1)
    value, _ = pairwise_loss(s, y, mask, phi=phi, weight=weight, seed=5)
    assert isinstance(value, float)
    assert value == pytest.approx(reference_pairwise(s, y, mask, phi, weight, seed=5), rel=1e-10)


@pytest.mark.parametrize("weight", sorted(WUB_WEIGHTS))
@pytest.mark.parametrize("gamma", [1.0, 0.3, "inv_pairs"])
def test_wub_gradient_and_value(weight, gamma):
    s, y, mask = make_batch(2)
    fn = lambda x: wub(x, y, mask, weight=weight, gamma=gamma, seed=3)
    value, grad = fn(s)
    numeric = finite_difference(lambda x: fn(x)[0], s)
    assert np.abs(grad).max() > 0
    assert relative_error(grad, numeric) < 1e-5
    assert np.all(grad[~mask] == 0)
    assert value == pytest.approx(reference_wub(s, y, mask, weight, gamma, seed=3), rel=1e-10)


def test_pairwise_logistic_unit_is_ranknet():
    s, y, mask = make_batch(3)
    value, grad = pairwise_loss(s, y, mask, phi="logistic", weight="unit")
    value_rn, grad_rn = ranknet(s, y, mask)
    assert value == pytest.approx(value_rn, rel=1e-13)
    np.testing.assert_allclose(grad, grad_rn, rtol=1e-12, atol=1e-15)


# --------------------------------------------------------------------------- hand-worked values

# labels A=2, B=0, C=1; all scores 0 so every quadratic phi(0) = 1 and the value is sum V_ij.
# n_levels = 3: R = (3/4, 0, 1/4); true positions A=1, C=2, B=3: eta = (1, 1/2, 1/log2 3);
# pairs (A,B), (A,C), (C,B); NDCG_max = 3 + 1/log2 3.
_ETA3 = 1 / math.log2(3)
HAND_VALUES = {
    "unit": 3.0,
    "inv_n": 1.0,
    "label_diff": 2 + 1 + 1,
    "label_diff_n": 4 / 3,
    "gain_pos": (3 / 4) * (1 - 1 / 2) + (1 / 2) * (1 - _ETA3) + (1 / 4) * (_ETA3 - 1 / 2),
    "ndcg_swap": ((3 / 4) * (1 / 2) + (1 / 2) * (1 - _ETA3) + (1 / 4) * (_ETA3 - 1 / 2)) / (3 + _ETA3),
    "gain_diff": 3 / 4 + 1 / 2 + 1 / 4,
    "gain_diff_n": (3 / 2) / 3,
    "exp_label_diff_n": (abs(2 - 0.5) + abs(2 - 1) + abs(1 - 0.5)) / 3,  # 2^(r-1) = 2, 1/2, 1
}


@pytest.mark.parametrize("weight", sorted(PAIR_WEIGHTS))
def test_weight_hand_values(weight):
    y = np.array([[2.0, 0.0, 1.0, 0.0]])
    mask = np.array([[True, True, True, False]])
    value, _ = pairwise_loss(np.zeros((1, 4)), y, mask, phi="quadratic", weight=weight, n_levels=3)
    assert value == pytest.approx(HAND_VALUES[weight], rel=1e-12)
    assert set(HAND_VALUES) == set(PAIR_WEIGHTS)


@pytest.mark.parametrize("phi,value,slope", [
    ("quadratic", 0.25, -1.0), ("hinge", 0.5, -1.0),
    ("exponential", math.exp(-0.5), -math.exp(-0.5)),
    ("logistic", math.log1p(math.exp(-0.5)), -1 / (1 + math.exp(0.5))),
])
def test_phi_hand_values(phi, value, slope):
    s, y, mask = np.array([[0.5, 0.0]]), np.array([[1.0, 0.0]]), np.ones((1, 2), dtype=bool)
    v, g = pairwise_loss(s, y, mask, phi=phi)
    assert v == pytest.approx(value, rel=1e-12)
    np.testing.assert_allclose(g, [[slope, -slope]], rtol=1e-12)


def test_hinge_is_flat_beyond_margin_and_uses_zero_subgradient_at_kink():
    y, mask = np.array([[1.0, 0.0]]), np.ones((1, 2), dtype=bool)
    assert pairwise_loss(np.array([[2.0, 0.0]]), y, mask, phi="hinge") == (0.0, pytest.approx(np.zeros((1, 2))))
    _, g = pairwise_loss(np.array([[1.0, 0.0]]), y, mask, phi="hinge")
    np.testing.assert_array_equal(g, np.zeros((1, 2)))


def test_wub_hand_values():
    mask = np.ones((1, 2), dtype=bool)
    # |L| = 2: Z_ij = 2 + e^x + e^-x = (2 cosh(x/2))^2, x = gamma d
    x = 0.7 * 0.5
    value, grad = wub(np.array([[0.5, 0.0]]), np.array([[1.0, 0.0]]), mask, gamma=0.7)
    assert value == pytest.approx(2 * math.log(2 * math.cosh(x / 2)) - x, rel=1e-12)
    assert grad[0, 0] == pytest.approx(0.7 * (math.tanh(x / 2) - 1), rel=1e-12)
    # a tied pair is pulled together: minimum at d = 0, log 4 there
    value_tied, grad_tied = wub(np.array([[0.5, 0.0]]), np.array([[1.0, 1.0]]), mask, gamma=0.7, n_levels=2)
    assert value_tied == pytest.approx(2 * math.log(2 * math.cosh(x / 2)), rel=1e-12)
    assert grad_tied[0, 0] > 0 and grad_tied[0, 1] < 0
    assert wub(np.zeros((1, 2)), np.array([[1.0, 1.0]]), mask, n_levels=2)[0] == pytest.approx(math.log(4))
    # pos_diff: positions 1, 2 -> |1 - 1/log2 3|
    value_pos, _ = wub(np.array([[0.5, 0.0]]), np.array([[1.0, 0.0]]), mask, gamma=0.7, weight="pos_diff")
    assert value_pos == pytest.approx((1 - _ETA3) * value, rel=1e-12)


@pytest.mark.parametrize("n_docs,n_levels", [(2, 2), (2, 4), (3, 2), (3, 3), (4, 3)])
def test_wub_bounds_the_exact_mrf_log_loss(n_docs, n_levels):
    """Appendix: -log P(r) <= sum_{i<j} -log Q(r_i, r_j) + (N - 2) log|L|, equality for N = 2."""
    rng = np.random.default_rng(n_docs * 10 + n_levels)
    for trial in range(5):
        f = rng.normal(size=n_docs)
        r = rng.integers(0, n_levels, n_docs).astype(float)
        gamma = rng.uniform(0.2, 2.0)
        log_potential = lambda labels: sum(gamma * np.sign(labels[i] - labels[j]) * (f[i] - f[j])
                                           for i, j in itertools.combinations(range(n_docs), 2))
        states = [log_potential(state) for state in itertools.product(range(n_levels), repeat=n_docs)]
        exact = np.logaddexp.reduce(states) - log_potential(r)
        value, _ = wub(f[None, :], r[None, :], np.ones((1, n_docs), dtype=bool), gamma=gamma, n_levels=n_levels)
        bound = value + (n_docs - 2) * math.log(n_levels)
        if n_docs == 2:
            assert bound == pytest.approx(exact, rel=1e-12)
        else:
            assert exact <= bound + 1e-12


# --------------------------------------------------------------------------- padding, ties, chunking

CONFIGS = ([(pairwise_loss, {"phi": p, "weight": "ndcg_swap"}) for p in sorted(PHIS)]
           + [(pairwise_loss, {"phi": "logistic", "weight": w}) for w in sorted(PAIR_WEIGHTS)]
           + [(wub, {"weight": w}) for w in sorted(WUB_WEIGHTS)] + [(wub, {"gamma": "inv_pairs"})])
CONFIG_IDS = [f"{fn.__name__}-{'-'.join(map(str, kw.values()))}" for fn, kw in CONFIGS]


@pytest.mark.parametrize("fn,kw", CONFIGS, ids=CONFIG_IDS)
def test_padding_content_changes_nothing(fn, kw):
    s, y, mask = make_batch(4)
    value, grad = fn(s, y, mask, **kw)
    s2, y2 = s.copy(), y.copy()
    rng = np.random.default_rng(0)
    s2[~mask] = rng.choice([np.nan, np.inf, -np.inf, 1e6, -7.0], size=(~mask).sum())
    y2[~mask] = rng.integers(0, 4, (~mask).sum())
    value2, grad2 = fn(s2, y2, mask, **kw)
    assert value2 == value
    np.testing.assert_array_equal(grad2, grad)


@pytest.mark.parametrize("fn,kw", CONFIGS, ids=CONFIG_IDS)
def test_extra_padding_columns_change_nothing(fn, kw):
    s, y, mask = make_batch(5)
    wide = lambda a, fill: np.concatenate([a, np.full((a.shape[0], 5), fill)], axis=1)
    value, grad = fn(s, y, mask, **kw)
    value2, grad2 = fn(wide(s, 9.0), wide(y, 3.0), wide(mask, False), **kw)
    assert value2 == pytest.approx(value, rel=1e-12)
    np.testing.assert_allclose(grad2[:, : s.shape[1]], grad, rtol=1e-12, atol=1e-15)
    assert np.all(grad2[:, s.shape[1]:] == 0)


@pytest.mark.parametrize("fn,kw", CONFIGS, ids=CONFIG_IDS)
def test_queries_without_terms_are_ignored(fn, kw):
    """Single-document queries have no pair; all-equal queries have no pair for l4 (but do
    for WUB, whose tied pairs are terms, so they are only added for l4)."""
    s, y, mask = make_batch(6)
    value, _ = fn(s, y, mask, **kw)
    extra_mask = np.zeros((2, s.shape[1]), dtype=bool)
    extra_mask[0, 0] = True
    extra_mask[1, :3] = fn is pairwise_loss
    extra_y = np.where(extra_mask, 1.0, 0.0)
    extra_s = np.where(extra_mask, np.arange(s.shape[1]), 0.0)
    value2, grad2 = fn(np.vstack([s, extra_s]), np.vstack([y, extra_y]), np.vstack([mask, extra_mask]), **kw)
    assert value2 == pytest.approx(value, rel=1e-12)
    assert np.all(grad2[-2:] == 0)


@pytest.mark.parametrize("fn", [pairwise_loss, wub])
def test_no_terms_at_all_gives_zero(fn):
    mask = np.zeros((3, 4), dtype=bool)
    mask[:, 0] = True
    value, grad = fn(np.ones((3, 4)), np.ones((3, 4)), mask)
    assert value == 0.0 and np.all(grad == 0)


def test_wub_counts_tied_pairs():
    """Eq. 17 sums over every pair: an all-equal query has terms and a gradient that
    pulls its scores together."""
    s = np.array([[1.0, -1.0, 0.0]])
    value, grad = wub(s, np.ones((1, 3)), np.ones((1, 3), dtype=bool), n_levels=3)
    assert value > 3 * math.log(3)  # 3 tied pairs, each log Z_ij >= log(|L| + 2m) = log 9
    assert grad[0, 0] > 0 and grad[0, 1] < 0 and grad.sum() == pytest.approx(0, abs=1e-12)


@pytest.mark.parametrize("fn,kw", [(pairwise_loss, {"phi": "quadratic", "weight": "ndcg_swap"}),
                                   (wub, {"weight": "pos_diff"})])
def test_chunking_and_row_tiles_do_not_change_result(fn, kw):
    """One long query among short ones: tiny blocks (row tiles of one row), mid blocks, default."""
    rng = np.random.default_rng(6)
    lengths = np.array([300, 3, 12, 1, 40, 7])
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    s, mask = pad(rng.normal(size=offsets[-1]), offsets)
    y, _ = pad(rng.integers(0, 5, offsets[-1]).astype(float), offsets)
    value, grad = fn(s, y, mask, **kw)
    for block_elements in (1, 5000):
        value_b, grad_b = fn(s, y, mask, block_elements=block_elements, **kw)
        assert value_b == pytest.approx(value, rel=1e-12)
        np.testing.assert_allclose(grad_b, grad, rtol=1e-10, atol=1e-14)


def test_position_weights_use_the_seeded_tie_break():
    s, y, mask = make_batch(7)
    v1 = pairwise_loss(s, y, mask, weight="gain_pos", seed=11)
    v2 = pairwise_loss(s, y, mask, weight="gain_pos", seed=11)
    assert v1[0] == v2[0] and np.array_equal(v1[1], v2[1])
    assert len({pairwise_loss(s, y, mask, weight="gain_pos", seed=k)[0] for k in range(8)}) > 1
    # label-only weights ignore the seed
    assert len({pairwise_loss(s, y, mask, weight="label_diff", seed=k)[0] for k in range(4)}) == 1


def test_n_levels_scales_the_gains():
    s, y, mask = make_batch(8)
    v3, _ = pairwise_loss(s, y, mask, weight="gain_diff")  # labels 0..3 -> |L| = 4
    v5, _ = pairwise_loss(s, y, mask, weight="gain_diff", n_levels=6)
    assert v5 == pytest.approx(v3 / 4, rel=1e-12)  # R divides by 2^(|L|-1)
    with pytest.raises(ValueError, match="n_levels"):
        pairwise_loss(s, y, mask, weight="gain_diff", n_levels=3)


def test_large_margins_are_stable():
    s, y, mask = np.array([[-800.0, 800.0]]), np.array([[1.0, 0.0]]), np.ones((1, 2), dtype=bool)
    value, grad = pairwise_loss(s, y, mask, phi="logistic")
    assert value == pytest.approx(1600.0)
    value, grad = wub(s, y, mask)
    assert np.isfinite(value) and np.all(np.isfinite(grad))
    assert value == pytest.approx(3200.0, rel=1e-12)  # log Z_ij = 1600 + log 1, and -sign * x = +1600
    np.testing.assert_allclose(grad, [[-2.0, 2.0]])


# --------------------------------------------------------------------------- names

def test_unknown_names_list_valid_ones():
    # by the declarations, before any job, without calling the loss
    with pytest.raises(ValueError) as err:
        check_loss_options("pairwise", {"phi": "cubic"})
    assert all(name in str(err.value) for name in PHIS)
    with pytest.raises(ValueError) as err:
        check_loss_options("pairwise", {"weight": "lambda"})
    assert all(name in str(err.value) for name in PAIR_WEIGHTS)
    with pytest.raises(ValueError) as err:
        check_loss_options("wub", {"weight": "label_diff_n"})
    assert "rating-free" in str(err.value) and all(name in str(err.value) for name in WUB_WEIGHTS)
    for bad in (0.0, -1.0, math.inf, "half", True):
        with pytest.raises(ValueError, match="gamma must be a number > 0 or one of inv_pairs"):
            check_loss_options("wub", {"gamma": bad})
    check_loss_options("wub", {"gamma": "inv_pairs"})
    check_loss_options("wub", {"gamma": 0.5})
    assert LOSSES["pairwise"].function is pairwise_loss and LOSSES["wub"].function is wub


# --------------------------------------------------------------------------- memory


@pytest.mark.parametrize("fn,kw", [(pairwise_loss, {"phi": "hinge", "weight": "ndcg_swap"}),
                                   (wub, {"weight": "pos_diff"})])
def test_long_query_memory_is_bounded(fn, kw):
    """A 1,000-document query stays under 32 MB of peak allocation (one dense 1000 x 1000
    float64 array alone is 8 MB, and a loss needs several), and doubling the query to 2,000
    documents barely moves the peak (a dense block would quadruple it)."""
    peak_1000 = peak_bytes(fn, 1000, **kw)
    peak_2000 = peak_bytes(fn, 2000, **kw)
    assert peak_1000 < 32 * 2**20
    assert peak_2000 < 1.3 * peak_1000


# --------------------------------------------------------------------------- learning


def train_and_score(loss, train, test):
    objective = Objective(LinearScorer().bind(train), loss, train, l2=1e-3)
    result = minimize(objective, np.zeros(objective.n_params), jac=True, method="L-BFGS-B",
                      options={"maxiter": 100})
    return test.X @ result.x


@pytest.mark.parametrize("fn,kw", [
    (pairwise_loss, {"phi": "logistic", "weight": "label_diff_n"}),
    (pairwise_loss, {"phi": "quadratic", "weight": "ndcg_swap"}),
    (pairwise_loss, {"phi": "hinge", "weight": "inv_n"}),
    (pairwise_loss, {"phi": "exponential", "weight": "exp_label_diff_n"}),
    (wub, {"weight": "unit"}),
])
def test_linear_model_beats_random(fn, kw):
    train, test = linear_signal_data(0), linear_signal_data(1)
    scores = train_and_score(lambda s, y, m: fn(s, y, m, **kw), train, test)
    random_scores = np.random.default_rng(2).normal(size=len(test.y))
    trained = per_query(scores, test.y, test.offsets, ["ndcg@10"])["ndcg@10"].mean()
    random = per_query(random_scores, test.y, test.offsets, ["ndcg@10"])["ndcg@10"].mean()
    assert trained > random + 0.25, (trained, random)
