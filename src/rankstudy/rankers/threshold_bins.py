"""RankBoost's weak rankers h(x) = [x_f > theta] on binned features (as RankLib searches a few
thresholds per feature): each feature is coded once into bins between its candidate thresholds,
so r(f, theta) = sum of pi over the documents with x_f > theta is, for every candidate of a
feature at once, a histogram of pi over the feature's codes read from the top bin down. A round
then costs one weighted bincount per feature, O(n) each, with nothing sorted and no float array
of n x d documents."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np


def feature_thresholds(column: np.ndarray, max_thresholds: int | None) -> np.ndarray:
    """One feature's candidate thresholds, descending: midpoints between consecutive distinct
    values; a feature with more than ``max_thresholds`` of them keeps about that many, at the
    first change of value at or after evenly spaced document ranks (quantiles)."""
    n = len(column)
    xs = -np.sort(-column)  # descending, NaN last (x > theta is false for NaN, as it never passes)
    k = np.flatnonzero(xs[:-1] > xs[1:])  # the value drops after sorted position k
    if max_thresholds is not None and len(k) > max_thresholds:
        targets = np.linspace(0, n - 1, max_thresholds + 2)[1:-1]
        k = np.unique(k[np.minimum(np.searchsorted(k, targets), len(k) - 1)])
    above, below = xs[k], xs[k + 1]
    theta = 0.5 * above + 0.5 * below
    # between two adjacent floats the midpoint may round up onto the upper one
    return np.where(theta >= above, below, theta)


class ThresholdBins(NamedTuple):
    """The candidates in search order (feature ascending, then threshold descending): ``feature``,
    ``theta`` and ``cut`` (the candidate is h = [code > cut]); ``codes`` (d, n), one row per
    feature: the number of the feature's thresholds below the document's value; ``starts``: each
    feature's first candidate (d + 1 offsets)."""

    codes: np.ndarray
    feature: np.ndarray
    theta: np.ndarray
    cut: np.ndarray
    starts: np.ndarray

    def h(self, j: int) -> np.ndarray:
        """Candidate j's weak ranker on the binned documents: 1.0 where x_f > theta."""
        return (self.codes[self.feature[j]] > self.cut[j]).astype(np.float64)


def code_dtype(max_codes: int) -> type:
    """The narrowest unsigned integer holding codes 0..max_codes."""
    for dtype in (np.uint8, np.uint16, np.uint32):
        if max_codes <= np.iinfo(dtype).max:
            return dtype
    return np.uint64


def bin_features(X: np.ndarray, max_thresholds: int | None) -> ThresholdBins:
    """Every feature's candidate thresholds and the documents' codes between them. Memory: the
    codes, d x n of one or two bytes (uint8 up to 255 thresholds a feature, uint16 up to 65,535),
    and one sorted column at a time."""
    n, d = X.shape
    thetas = [feature_thresholds(X[:, f], max_thresholds) for f in range(d)]  # setup: once per fit
    sizes = np.array([len(t) for t in thetas])
    codes = np.empty((d, n), dtype=code_dtype(int(sizes.max(initial=0))))
    for f, theta in enumerate(thetas):
        # thresholds below x, i.e. theta < x; NaN is above none (searchsorted would put it last)
        codes[f] = np.where(np.isnan(X[:, f]), 0, np.searchsorted(theta[::-1], X[:, f], side="left"))
    feature = np.repeat(np.arange(d), sizes)
    starts = np.concatenate([[0], np.cumsum(sizes)])
    # descending threshold p of a feature with m thresholds: h = [code >= m - p] = [code > m - p - 1]
    cut = (sizes[feature] - 1 - (np.arange(len(feature)) - starts[feature])).astype(np.int64)
    theta = np.concatenate(thetas) if thetas else np.zeros(0)
    return ThresholdBins(codes, feature, theta, cut, starts)


def all_r(pi: np.ndarray, bins: ThresholdBins) -> np.ndarray:
    """r(f, theta) for every candidate, in search order: per feature, the histogram of pi over
    its codes (one bincount), summed from the top bin down."""
    r = np.empty(len(bins.theta))
    starts = bins.starts
    for f in range(len(starts) - 1):  # features, not documents: d bincounts of n each
        m = starts[f + 1] - starts[f]
        if m:
            hist = np.bincount(bins.codes[f], weights=pi, minlength=m + 1)
            r[starts[f]:starts[f + 1]] = np.cumsum(hist[::-1])[:m]
    return r
