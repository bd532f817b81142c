"""Feature normalisation fitted on the training split only.

Kinds:

``"zscore"``
    Global per-feature standardisation ``(x - mean) / std`` with mean and std
    taken from the *training* split; validation/test use the training
    statistics, so no information leaks from held-out queries. A feature that is
    constant on the training split maps to 0 everywhere (after centring it would
    be 0/0).
``"querylevel"``
    LETOR ``QueryLevelNorm``: min-max scaling within each query,
    ``(x - min_q) / (max_q - min_q)``; a feature constant within a query maps to
    0 for that query. Stateless (each query is normalised by itself).
``"none"``
    Identity.

A value whose normalisation float64 cannot hold (features of +-1.7e308 parse, but their mean,
spread or range overflows) is refused with :class:`UnrepresentableValue`, naming the split, the
feature and the value, instead of being written on as NaN or inf.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from rankstudy.data.rankdata import RankData

NORMALIZERS: tuple[str, ...] = ("zscore", "querylevel", "none")


def _check_kind(kind: str) -> str:
    if kind not in NORMALIZERS:
        raise ValueError(f"unknown normaliser kind {kind!r}; valid kinds: {', '.join(NORMALIZERS)}")
    return kind


class UnrepresentableValue(ValueError):
    """A feature value that normalisation (or the features' dtype) cannot represent; the message
    names the split, the feature (1-based) and the value."""


def all_finite(a: np.ndarray) -> bool:
    """No NaN or inf in ``a``: min and max propagate NaN, and need no array of the flags."""
    return a.size == 0 or bool(np.isfinite(a.min()) and np.isfinite(a.max()))


def refuse(X: np.ndarray, bad: np.ndarray, data: RankData, name: str, what: str):
    """Raise :class:`UnrepresentableValue`: one line naming ``name``, the first feature with a
    ``bad`` cell (``bad`` shaped as ``X``, the features of ``data``) and its largest value there,
    followed by ``what`` is wrong with it."""
    column = int(np.flatnonzero(bad.any(axis=0))[0])
    rows = np.flatnonzero(bad[:, column])
    row = int(rows[np.argmax(np.abs(X[rows, column]))])
    raise UnrepresentableValue(f"{name}: feature {column + 1} (query {data.qid[row]}) has the value "
                               f"{float(X[row, column])!r}, {what}; rescale or remove it in the data and run again")


def check_finite(data: RankData, name: str, what: str) -> None:
    """Refuse features of ``data`` that are NaN or inf, ``what`` saying where they came from."""
    if not all_finite(data.X):
        refuse(data.X, ~np.isfinite(data.X), data, name, what)


def query_min_max_scale(X: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """Min-max scale each column of ``X`` within each query block (constant block -> 0)."""
    return _query_min_max(X, offsets)[0]


def _query_min_max(X: np.ndarray, offsets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:func:`query_min_max_scale`, and which (query, feature) ranges overflow float64 (Q, m)."""
    X = np.asarray(X, dtype=np.float64)
    if X.shape[0] == 0:
        return X.copy(), np.zeros((0, X.shape[1]), dtype=bool)
    starts, lengths = offsets[:-1], np.diff(offsets)
    low = np.minimum.reduceat(X, starts, axis=0)
    with np.errstate(over="ignore", invalid="ignore"):  # an overflowing range is refused by the caller
        query_span = np.maximum.reduceat(X, starts, axis=0) - low
        lo = np.repeat(low, lengths, axis=0)
        span = np.repeat(query_span, lengths, axis=0)
        # divide only where the query has spread in that feature; elsewhere the result stays 0
        out = np.divide(X - lo, span, out=np.zeros_like(X), where=span > 0)
    # a range of inf scales its query's feature to 0 or NaN; a finite one keeps every value in [0, 1]
    return out, ~np.isfinite(query_span)


class Normalizer:
    """Feature normaliser with scikit-learn-like ``fit`` / ``transform``.

    Fitted state (``zscore`` only) is ``mean_`` and ``scale_`` (the multiplier
    ``1/std``, 0 for zero-variance features), both of length ``n_features``.
    """

    def __init__(self, kind: str = "zscore") -> None:
        self.kind = _check_kind(kind)
        self.mean_: np.ndarray | None = None
        self.scale_: np.ndarray | None = None

    def __repr__(self) -> str:
        return f"Normalizer(kind={self.kind!r})"

    def fit(self, train: RankData, name: str = "the training split") -> "Normalizer":
        """Fit on ``train`` (named ``name`` in an error)."""
        if self.kind == "zscore":
            X = train.X
            with np.errstate(over="ignore", invalid="ignore"):  # overflow is refused below, by feature
                mean = X.mean(axis=0)
                mean += (X - mean).mean(axis=0)  # one refinement step: exact to rounding for large offsets
                # two-pass variance (centre, then square) avoids E[x^2]-E[x]^2 cancellation
                std = np.sqrt(((X - mean) ** 2).mean(axis=0))
            overflow = ~np.isfinite(mean) | ~np.isfinite(std)
            if overflow.any():
                refuse(X, np.broadcast_to(overflow, X.shape), train, name,
                       "with which the zscore statistics (mean, spread) overflow float64")
            # relative tolerance: a feature whose spread is pure rounding noise counts as constant
            constant = std <= 1e-12 * np.maximum(np.abs(mean), 1.0)
            self.mean_ = mean
            self.scale_ = np.where(constant, 0.0, 1.0 / np.where(constant, 1.0, std))
        return self

    def transform(self, data: RankData, name: str = "the data") -> RankData:
        """``data`` normalised (named ``name`` in an error: a value it cannot represent is refused)."""
        if self.kind == "none":
            return data.with_features(data.X.copy())
        if self.kind == "querylevel":
            out, overflow = _query_min_max(data.X, data.offsets)
            if overflow.any():
                refuse(data.X, np.repeat(overflow, np.diff(data.offsets), axis=0), data, name,
                       "with which its query's range overflows float64 (querylevel normalisation)")
            return data.with_features(out)
        if self.mean_ is None or self.scale_ is None:
            raise RuntimeError("Normalizer('zscore') must be fitted before transform")
        if data.n_features != len(self.mean_):
            raise ValueError(f"fitted on {len(self.mean_)} features, got {data.n_features}")
        with np.errstate(over="ignore", invalid="ignore"):
            out = (data.X - self.mean_) * self.scale_
        if not all_finite(out):
            refuse(data.X, ~np.isfinite(out), data, name,
                   "whose zscore (with the training split's mean and spread) overflows float64")
        return data.with_features(out)

    def cast(self, data: RankData, dtype, name: str = "the data") -> RankData:
        """Normalised ``data`` stored as ``dtype`` (features.dtype): a value it cannot hold is refused."""
        with np.errstate(over="ignore"):
            X = data.X.astype(dtype)
        if not all_finite(X):
            refuse(data.X, ~np.isfinite(X), data, name,
                   f"after {self.kind} normalisation, which {np.dtype(dtype).name} (features.dtype) cannot hold")
        return data.with_features(X)

    def fit_transform(self, train: RankData, name: str = "the training split") -> RankData:
        return self.fit(train, name).transform(train, name)

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"kind": self.kind}
        if self.mean_ is not None and self.scale_ is not None:
            d["mean"] = self.mean_.tolist()
            d["scale"] = self.scale_.tolist()
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Normalizer":
        norm = cls(d["kind"])
        if "mean" in d:
            norm.mean_ = np.asarray(d["mean"], dtype=np.float64)
            norm.scale_ = np.asarray(d["scale"], dtype=np.float64)
        return norm
