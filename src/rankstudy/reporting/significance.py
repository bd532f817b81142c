"""Paired significance tests over per-query metric values, and Holm's correction.

All tests take two arrays of per-query values for the *same* queries in the same
order (system ``a`` and system ``b``). Pairs where either value is NaN (queries
dropped by the no-relevant-document policy) are removed before testing.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
from scipy import optimize, stats

# Upper bound on the number of entries of one sign matrix, so memory stays small
# (about 32 MB of float64) whatever the number of queries.
_MAX_SIGN_MATRIX_ENTRIES = 1 << 22
# Relative size of floating-point noise in metric differences, below which values count as equal.
_ROUNDING = 1e-12


def paired_finite(a, b) -> tuple[np.ndarray, np.ndarray]:
    """The pairs of ``a`` and ``b`` where both values are finite, as float arrays."""
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    if a.shape != b.shape or a.ndim != 1:
        raise ValueError(f"paired test needs two 1-d arrays of equal length, got {a.shape} and {b.shape}")
    keep = np.isfinite(a) & np.isfinite(b)
    return a[keep], b[keep]


def paired_ttest(a, b) -> float:
    """Two-sided p-value of the paired t-test of mean(a - b) = 0.

    Identical arrays give 1.0 (scipy would give NaN from 0/0); a constant non-zero
    difference gives 0.0. Fewer than two pairs give NaN: there is nothing to test.
    """
    a, b = paired_finite(a, b)
    if len(a) < 2:
        return float("nan")
    diff = a - b
    # Zero variance (up to rounding, e.g. a = b + 0.1): t is 0/0 or +-inf, and
    # scipy would return NaN or warn about catastrophic cancellation.
    scale = _ROUNDING * max(1.0, float(np.abs(diff).max()))
    if np.ptp(diff) <= scale:
        return 1.0 if abs(diff.mean()) <= scale else 0.0
    return float(stats.ttest_rel(a, b).pvalue)


def randomization_test(a, b, n_resamples: int = 10000, seed: int = 0) -> float:
    """Two-sided paired sign-flip randomization test of the mean difference.

    Under H0 each per-query difference is equally likely to have either sign, so
    we flip signs at random and count resampled |mean| at least as large as the
    observed one. p = (count + 1) / (n_resamples + 1), which is never 0 and is a
    valid p-value for a Monte-Carlo test. Sign matrices are drawn in chunks of
    shape (chunk, n_queries) to keep memory bounded.
    """
    a, b = paired_finite(a, b)
    return float(randomization_tests(a[:, None], b, n_resamples=n_resamples, seed=seed)[0])


def randomization_tests(a_columns, b, n_resamples: int = 10000, seed: int = 0) -> np.ndarray:
    """:func:`randomization_test` of each column of ``a_columns`` (queries x systems) against
    ``b``. Columns whose finite pairs are the same queries share each sign matrix in one matrix
    product: the same seed draws the same matrix for each of them anyway, and drawing it is most
    of the cost (31.5k queries x 10,000 resamples per test)."""
    a = np.asarray(a_columns, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    if a.ndim != 2 or b.ndim != 1 or a.shape[0] != b.shape[0]:
        raise ValueError(f"paired tests need a (queries, systems) array and a 1-d array of as many queries, "
                         f"got {a.shape} and {b.shape}")
    return randomization_tests_of_differences(a - b[:, None], n_resamples=n_resamples, seed=seed)


def randomization_tests_of_differences(differences, n_resamples: int = 10000, seed: int = 0) -> np.ndarray:
    """:func:`randomization_test` of each column of per-query ``differences`` (queries x tests;
    NaN where a pair is missing), e.g. every pair of several systems at once. Columns with the
    same finite queries share each sign matrix in one matrix product."""
    if n_resamples < 1:
        raise ValueError(f"n_resamples must be >= 1, got {n_resamples}")
    diff = np.asarray(differences, dtype=np.float64)
    if diff.ndim != 2:
        raise ValueError(f"differences must be a (queries, tests) array, got shape {diff.shape}")
    finite = np.isfinite(diff)
    groups: dict[bytes, list[int]] = {}
    for column in range(diff.shape[1]):
        groups.setdefault(finite[:, column].tobytes(), []).append(column)
    pvalues = np.full(diff.shape[1], np.nan)  # NaN where no pair is finite
    for columns in groups.values():
        keep = finite[:, columns[0]]
        if keep.any():
            pvalues[columns] = _sign_flip_pvalues(diff[keep][:, columns], n_resamples, seed)
    return pvalues


def mean_difference_intervals(differences, confidence: float = 0.95) -> dict[str, np.ndarray]:
    """Per column of per-query ``differences`` (queries x tests, NaN where a pair is missing):
    ``n`` finite pairs, their ``mean``, standard deviation ``sd`` (ddof=1) and the two-sided
    ``confidence`` t-interval ``lo``..``hi`` of the mean (mean +- t_{n-1} sd / sqrt(n), the
    interval the paired t-test inverts). ``confidence`` may be an array, one level per column.
    Fewer than two pairs give a NaN interval; no pair gives a NaN mean."""
    diff = np.asarray(differences, dtype=np.float64)
    if diff.ndim != 2:
        raise ValueError(f"differences must be a (queries, tests) array, got shape {diff.shape}")
    finite = np.isfinite(diff)
    n = finite.sum(axis=0)
    values = np.where(finite, diff, 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):  # n = 0 or 1: NaN by design
        mean = values.sum(axis=0) / n
        squares = np.where(finite, diff - mean, 0.0) ** 2
        sd = np.sqrt(squares.sum(axis=0) / (n - 1))
        half = stats.t.ppf(0.5 + confidence / 2, n - 1) * sd / np.sqrt(n)
    half = np.where(n >= 2, half, np.nan)
    return {"n": n, "mean": mean, "sd": np.where(n >= 2, sd, np.nan), "lo": mean - half, "hi": mean + half}


def holm_consistent_levels(pvalues, adjusted, alpha: float) -> np.ndarray:
    """Per test, the confidence level 1 - alpha * p / p_holm of its interval, so that the
    interval excludes 0 exactly where the Holm-adjusted p is below ``alpha``: the interval
    inverts the same test at the level Holm's step-down used for it (alpha / (m - j + 1) for the
    j-th smallest p, lower where Holm's monotone step raised p_holm above (m - j + 1) p). Not
    simultaneous coverage: each interval agrees with its own adjusted decision. NaN where p is."""
    p, adjusted = np.asarray(pvalues, dtype=np.float64), np.asarray(adjusted, dtype=np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        # p = 0 (a constant, non-zero difference) has a zero-width interval at any level
        level = np.where(adjusted > 0, 1.0 - alpha * p / adjusted, 1.0 - alpha)
    return np.where(np.isnan(p) | np.isnan(adjusted), np.nan, level)


@lru_cache(maxsize=1024)
def t_noncentrality_for_power(df: int, alpha: float, power: float) -> float:
    """The noncentrality lambda at which the two-sided level-``alpha`` t-test with ``df`` degrees
    of freedom rejects with probability ``power``: P(|T'| > t_{1-alpha/2, df}) = power for
    T' ~ noncentral t(df, lambda). Depends on n, not on the data, hence cached."""
    if df < 1:
        return float("nan")
    critical = stats.t.ppf(1.0 - alpha / 2.0, df)

    def shortfall(lam: float) -> float:
        # the lower tail as sf at -lambda: nct.cdf(-c, df, lam) is NaN far out in scipy 1.17
        return stats.nct.sf(critical, df, lam) + stats.nct.sf(critical, df, -lam) - power

    # the normal approximation's lambda is below the exact one; widen until power is reached
    high = stats.norm.ppf(1.0 - alpha / 2.0) + stats.norm.ppf(power) + 1.0
    while shortfall(high) < 0:
        high *= 2.0
    return float(optimize.brentq(shortfall, 0.0, high, xtol=1e-12))


def minimum_detectable_differences(sd, n, alpha: float, power: float = 0.8) -> np.ndarray:
    """The smallest true mean paired difference that the two-sided paired t-test at level
    ``alpha`` detects with probability ``power``, for per-query differences of standard
    deviation ``sd`` over ``n`` queries: lambda(n - 1) sd / sqrt(n), lambda solved exactly from
    the noncentral t (:func:`t_noncentrality_for_power`), not from the normal approximation
    (z_{1-alpha/2} + z_power) sd / sqrt(n), which is smaller for small n. NaN under two queries.
    ``alpha`` may be an array (e.g. a family's Bonferroni level per column)."""
    sd, n = np.asarray(sd, dtype=np.float64), np.asarray(n)
    sd, n, alpha = np.broadcast_arrays(sd, n, np.asarray(alpha, dtype=np.float64))
    lam = np.array([t_noncentrality_for_power(int(k) - 1, float(a), power) if k >= 2 and np.isfinite(a) else np.nan
                    for k, a in zip(n.ravel(), alpha.ravel())]).reshape(sd.shape)  # one solve per (n, alpha)
    with np.errstate(invalid="ignore", divide="ignore"):
        return lam * sd / np.sqrt(n)


def _sign_flip_pvalues(diff: np.ndarray, n_resamples: int, seed: int) -> np.ndarray:
    """p-values of the columns of ``diff`` (queries x tests), all under the same sign flips."""
    n = diff.shape[0]
    observed = np.abs(diff.mean(axis=0))
    # Resampled means equal to the observed one must count; allow for rounding
    # in the matrix product, which sums in a different order than .mean().
    threshold = observed - _ROUNDING * np.maximum(1.0, np.abs(diff).max(axis=0))
    rng = np.random.default_rng(seed)
    chunk = max(1, min(n_resamples, _MAX_SIGN_MATRIX_ENTRIES // n))
    count = np.zeros(diff.shape[1], dtype=np.int64)
    for start in range(0, n_resamples, chunk):
        rows = min(chunk, n_resamples - start)
        signs = rng.integers(0, 2, size=(rows, n), dtype=np.int8) * 2 - 1
        resampled_means = (signs @ diff) / n
        count += np.count_nonzero(np.abs(resampled_means) >= threshold, axis=0)
    return (count + 1) / (n_resamples + 1)


def holm(pvalues) -> np.ndarray:
    """Holm-Bonferroni adjusted p-values, in the input order.

    adjusted p_(i) = max_{j <= i} min(1, (m - j + 1) p_(j)) over the ascending
    order of the m non-NaN p-values; NaN entries stay NaN and do not count in m.
    """
    p = np.asarray(pvalues, dtype=np.float64)
    adjusted = np.full(p.shape, np.nan)
    valid = np.flatnonzero(~np.isnan(p))
    m = len(valid)
    if m == 0:
        return adjusted
    order = valid[np.argsort(p[valid], kind="stable")]
    scaled = np.minimum(1.0, (m - np.arange(m)) * p[order])
    adjusted[order] = np.maximum.accumulate(scaled)  # keeps the adjusted values monotone
    return adjusted
