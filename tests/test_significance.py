"""Paired t-test, sign-flip randomization test and Holm correction."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import integrate, stats

from rankstudy.reporting import significance
from rankstudy.reporting.significance import (holm, holm_consistent_levels, mean_difference_intervals,
                                              minimum_detectable_differences, paired_ttest, randomization_test,
                                              randomization_tests, randomization_tests_of_differences)


def exact_sign_flip_pvalue(a: np.ndarray, b: np.ndarray) -> float:
    """Two-sided p over all 2^n sign flips of the differences (small n only)."""
    diff = np.asarray(a, float) - np.asarray(b, float)
    n = len(diff)
    signs = ((np.arange(2**n)[:, None] >> np.arange(n)) & 1) * 2 - 1
    means = np.abs(signs @ diff) / n
    return float(np.mean(means >= abs(diff.mean()) - 1e-12))


# A 10-query example whose exact p is moderate (not near 0 or 1), so a wrong
# tail (one-sided), a wrong statistic or a wrong count would show.
A10 = np.array([0.62, 0.48, 0.71, 0.55, 0.40, 0.66, 0.59, 0.52, 0.47, 0.70])
B10 = np.array([0.55, 0.50, 0.60, 0.58, 0.31, 0.64, 0.49, 0.57, 0.45, 0.61])


# ---------------------------------------------------------------- t-test


def test_paired_ttest_matches_hand_computation():
    a = [0.5, 0.7, 0.6, 0.9, 0.4]
    b = [0.4, 0.5, 0.6, 0.6, 0.3]
    # d = [.1 .2 0 .3 .1]: mean .14, sample var .052/4 = .013, t = .14 / sqrt(.013/5)
    t = 0.14 / np.sqrt(0.013 / 5)
    # Student t with 4 df has a closed form: P(|T| < t) = s (1 + (1 - s^2) / 2), s = t / sqrt(t^2 + 4)
    s = t / np.sqrt(t**2 + 4)
    p_hand = 1 - s * (1 + (1 - s**2) / 2)
    assert paired_ttest(a, b) == pytest.approx(p_hand, rel=1e-9)
    assert paired_ttest(b, a) == pytest.approx(p_hand, rel=1e-9)  # two-sided


def test_paired_ttest_degenerate_cases():
    x = np.array([0.3, 0.5, 0.9])
    assert paired_ttest(x, x) == 1.0
    assert paired_ttest(x + 0.1, x) == 0.0  # constant non-zero difference (up to rounding)
    assert paired_ttest(x + np.array([0.0, 1e-17, -1e-17]), x) == 1.0
    assert np.isnan(paired_ttest([0.5], [0.4]))
    with pytest.raises(ValueError):
        paired_ttest([0.1, 0.2], [0.1, 0.2, 0.3])


def test_paired_ttest_drops_nan_pairs():
    a = np.array([0.5, np.nan, 0.7, 0.6, 0.9, 0.4, 0.2])
    b = np.array([0.4, 0.3, 0.5, 0.6, 0.6, 0.3, np.nan])
    keep = [0, 2, 3, 4, 5]
    assert paired_ttest(a, b) == pytest.approx(stats.ttest_rel(a[keep], b[keep]).pvalue, rel=1e-12)


# ---------------------------------------------------------------- randomization test


def test_randomization_matches_exact_enumeration_n10():
    exact = exact_sign_flip_pvalue(A10, B10)
    assert 0.05 < exact < 0.5  # the example is informative
    n_resamples = 20000
    p = randomization_test(A10, B10, n_resamples=n_resamples, seed=1)
    se = np.sqrt(exact * (1 - exact) / n_resamples)
    assert abs(p - exact) < 4 * se + 1 / (n_resamples + 1)


def test_randomization_matches_scipy_permutation_test():
    def mean_diff(x, y, axis):
        return np.mean(x - y, axis=axis)

    # n = 10: scipy enumerates all 2^10 sign flips exactly.
    exact = stats.permutation_test(
        (A10, B10), mean_diff, permutation_type="samples", alternative="two-sided", n_resamples=5000
    ).pvalue
    assert exact == pytest.approx(exact_sign_flip_pvalue(A10, B10), abs=1e-12)
    assert randomization_test(A10, B10, n_resamples=20000, seed=2) == pytest.approx(exact, abs=0.015)

    # n = 40: both sides are Monte Carlo.
    rng = np.random.default_rng(7)
    b = rng.uniform(0.2, 0.8, 40)
    a = b + rng.normal(0.03, 0.1, 40)
    ref = stats.permutation_test(
        (a, b), mean_diff, permutation_type="samples", alternative="two-sided",
        n_resamples=20000, rng=np.random.default_rng(3),
    ).pvalue
    assert 0.02 < ref < 0.8
    assert randomization_test(a, b, n_resamples=20000, seed=3) == pytest.approx(ref, abs=0.02)


def test_randomization_chunking_does_not_change_the_answer(monkeypatch):
    exact = exact_sign_flip_pvalue(A10, B10)
    monkeypatch.setattr(significance, "_MAX_SIGN_MATRIX_ENTRIES", 10 * 7)  # chunks of 7 rows
    p = randomization_test(A10, B10, n_resamples=5001, seed=4)
    assert abs(p - exact) < 4 * np.sqrt(exact * (1 - exact) / 5001) + 1 / 5002


def test_randomization_bounds_reproducibility_and_nan():
    x = np.array([0.3, 0.5, 0.9, 0.1])
    assert randomization_test(x, x, n_resamples=999) == 1.0
    rng = np.random.default_rng(0)
    b = rng.uniform(size=50)
    # A huge effect: no resample reaches it, so p is the smallest possible value.
    assert randomization_test(b + 1.0 + rng.uniform(size=50), b, n_resamples=999) == pytest.approx(1 / 1000)
    a = b + rng.normal(0, 0.2, 50)
    assert randomization_test(a, b, seed=5, n_resamples=2000) == randomization_test(a, b, seed=5, n_resamples=2000)
    a_nan, b_nan = a.copy(), b.copy()
    a_nan[[3, 9]] = np.nan
    b_nan[20] = np.nan
    keep = np.isfinite(a_nan) & np.isfinite(b_nan)
    assert randomization_test(a_nan, b_nan, seed=5, n_resamples=2000) == randomization_test(
        a[keep], b[keep], seed=5, n_resamples=2000
    )
    with pytest.raises(ValueError):
        randomization_test(a, b, n_resamples=0)


def test_randomization_tests_of_many_systems_equal_one_test_per_system():
    """Systems with the same finite queries share sign matrices; one with other NaNs gets its own
    draw; one with no finite pair gets NaN. Each p-value equals the single test's."""
    rng = np.random.default_rng(8)
    b = rng.uniform(size=80)
    columns = np.column_stack([b + rng.normal(shift, 0.2, 80) for shift in (0.0, 0.03, 0.1, 0.0)])
    columns[[5, 17], 2] = np.nan
    columns[:, 3] = np.nan
    p = randomization_tests(columns, b, n_resamples=3000, seed=9)
    expected = [randomization_test(columns[:, j], b, n_resamples=3000, seed=9) for j in range(3)]
    assert list(p[:3]) == expected and np.isnan(p[3])
    assert p[2] < 0.01 < p[0]  # the tests are informative


def test_randomization_tests_of_differences_equal_the_paired_form():
    """Differences of any pairs (here each column against another column, NaN where either is
    missing) give the p-values of the tests of the pairs themselves."""
    rng = np.random.default_rng(10)
    values = rng.uniform(size=(70, 3)) + np.array([0.0, 0.02, 0.3])
    values[[4, 8], 1] = np.nan
    pairs = [(1, 0), (2, 0), (2, 1)]
    diff = np.column_stack([values[:, a] - values[:, b] for a, b in pairs])
    p = randomization_tests_of_differences(diff, n_resamples=2000, seed=4)
    assert list(p) == [randomization_test(values[:, a], values[:, b], n_resamples=2000, seed=4) for a, b in pairs]
    assert p[1] < 0.01 < p[0]
    with pytest.raises(ValueError):
        randomization_tests_of_differences(diff[:, 0], n_resamples=10)


# ---------------------------------------------------------------- interval of the mean difference


def test_mean_difference_intervals_match_scipy():
    rng = np.random.default_rng(12)
    a = rng.uniform(size=(40, 3))
    b = a + rng.normal(0.02, 0.1, size=(40, 3))
    a[[1, 7, 30], 0] = np.nan
    out = mean_difference_intervals(b - a, confidence=0.9)
    for j in range(3):
        keep = np.isfinite(a[:, j])
        ref = stats.ttest_rel(b[keep, j], a[keep, j])
        interval = ref.confidence_interval(0.9)
        assert out["n"][j] == keep.sum()
        assert out["mean"][j] == pytest.approx(np.mean(b[keep, j] - a[keep, j]), abs=1e-14)
        assert (out["lo"][j], out["hi"][j]) == pytest.approx((interval.low, interval.high), abs=1e-12)
    # one pair: a mean and no interval; none: nothing; a constant difference: a zero-width interval
    edge = mean_difference_intervals(np.array([[0.3, np.nan, 0.1], [np.nan, np.nan, 0.1]]))
    assert edge["n"].tolist() == [1, 0, 2]
    assert edge["mean"][0] == 0.3 and np.isnan(edge["lo"][0]) and np.isnan(edge["hi"][0])
    assert np.isnan(edge["mean"][1])
    assert edge["lo"][2] == pytest.approx(0.1) and edge["hi"][2] == pytest.approx(0.1)


# ---------------------------------------------------------------- Holm


def test_holm_hand_worked_example():
    # sorted: .005*4 = .02, .01*3 = .03, .03*2 = .06, .04*1 = .04 -> raised to .06 (monotone)
    p = [0.01, 0.04, 0.03, 0.005]
    np.testing.assert_allclose(holm(p), [0.03, 0.06, 0.06, 0.02])


def test_holm_nan_cap_and_edge_cases():
    np.testing.assert_allclose(holm([0.01, np.nan, 0.04, 0.03, 0.005]), [0.03, np.nan, 0.06, 0.06, 0.02])
    np.testing.assert_allclose(holm([0.5, 0.6]), [1.0, 1.0])  # .5*2 = 1, .6 raised to 1
    np.testing.assert_allclose(holm([0.3, 0.02]), [0.3, 0.04])
    assert holm([]).shape == (0,)
    assert np.isnan(holm([np.nan, np.nan])).all()
    rng = np.random.default_rng(0)
    p = rng.uniform(size=30)
    adjusted = holm(p)
    assert np.all(adjusted >= p) and np.all(adjusted <= 1)
    order = np.argsort(p)
    assert np.all(np.diff(adjusted[order]) >= 0)


# ---------------------------------------------------------------- power and Holm-consistent intervals


@pytest.mark.parametrize("n, alpha", [(5, 0.05), (20, 0.05), (106, 0.05), (784, 0.05), (784, 0.05 / 325)])
def test_minimum_detectable_difference_has_the_power_asked_for(n, alpha):
    """At the MDD the two-sided paired t-test's power, written out from the noncentral t, is .8;
    for large n the MDD nears the normal approximation (z_{1-alpha/2} + z_.8) sd / sqrt(n) from above."""
    sd = 0.17
    mdd = float(minimum_detectable_differences(sd, n, alpha, 0.8))
    # T' = (Z + lambda) / sqrt(V / df), V ~ chi2(df): P(|T'| > c) integrated over V, no noncentral t
    df, critical, nc = n - 1, stats.t.ppf(1 - alpha / 2, n - 1), mdd * np.sqrt(n) / sd
    power, _ = integrate.quad(lambda v: (stats.norm.sf(critical * np.sqrt(v / df) - nc)
                                         + stats.norm.cdf(-critical * np.sqrt(v / df) - nc)) * stats.chi2.pdf(v, df),
                              stats.chi2.ppf(1e-14, df), stats.chi2.isf(1e-14, df), epsabs=1e-12, limit=200)
    assert power == pytest.approx(0.8, abs=1e-6)
    normal = (stats.norm.ppf(1 - alpha / 2) + stats.norm.ppf(0.8)) * sd / np.sqrt(n)
    assert normal < mdd < normal * (1 + 4 / n)


def test_minimum_detectable_difference_by_simulation():
    """Simulated paired samples whose true mean difference is the MDD: the t-test rejects in
    80% of them (4000 samples of 20 queries: standard error .006)."""
    n, sd = 20, 0.1
    mdd = float(minimum_detectable_differences(sd, n, 0.05))
    rng = np.random.default_rng(5)
    differences = mdd + sd * rng.normal(size=(4000, n))
    rejected = stats.ttest_1samp(differences, 0.0, axis=1).pvalue < 0.05
    assert rejected.mean() == pytest.approx(0.8, abs=0.025)


def test_minimum_detectable_differences_broadcast_and_edge_cases():
    out = minimum_detectable_differences(np.array([0.1, 0.2, 0.1, 0.0, 0.1]), np.array([50, 50, 1, 50, 0]),
                                         np.array([0.05, 0.05, 0.05, 0.05, 0.05]))
    assert out[1] == pytest.approx(2 * out[0]) and np.isnan(out[2]) and out[3] == 0 and np.isnan(out[4])
    assert minimum_detectable_differences(0.1, 50, 0.01) > out[0]  # a stricter level needs more


def test_holm_consistent_levels_agree_with_the_adjusted_decision():
    rng = np.random.default_rng(8)
    n = 60
    differences = rng.normal(size=(n, 40)) * 0.1 + rng.uniform(-0.05, 0.05, size=40)
    p = stats.ttest_1samp(differences, 0.0).pvalue
    adjusted = holm(p)
    level = holm_consistent_levels(p, adjusted, 0.05)
    assert ((p < 0.05) & (adjusted >= 0.05)).any() and (adjusted < 0.05).any()  # informative
    result = stats.ttest_1samp(differences, 0.0)
    intervals = [stats.ttest_1samp(differences[:, j], 0.0).confidence_interval(level[j]) for j in range(40)]
    excludes = np.array([i.low > 0 or i.high < 0 for i in intervals])
    np.testing.assert_array_equal(excludes, adjusted < 0.05)
    assert result.pvalue.shape == (40,)
    assert (level >= 0.95).all() and (level <= 1 - 0.05 / 40 + 1e-15).all()
    assert np.isnan(holm_consistent_levels([np.nan, 0.01], [np.nan, 0.02], 0.05)[0])
