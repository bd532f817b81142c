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


def query_min_max_scale(X: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """Min-max scale each column of ``X`` within each query block (constant block -> 0)."""
    X = np.asarray(X, dtype=np.float64)
    if X.shape[0] == 0:
        return X.copy()
    starts, lengths = offsets[:-1], np.diff(offsets)
    lo = np.repeat(np.minimum.reduceat(X, starts, axis=0), lengths, axis=0)
    span = np.repeat(np.maximum.reduceat(X, starts, axis=0), lengths, axis=0) - lo
    # divide only where the query has spread in that feature; elsewhere the result stays 0
    return np.divide(X - lo, span, out=np.zeros_like(X), where=span > 0)


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

    def fit(self, train: RankData) -> "Normalizer":
        if self.kind == "zscore":
            X = train.X
            mean = X.mean(axis=0)
            mean += (X - mean).mean(axis=0)  # one refinement step: exact to rounding for large offsets
            # two-pass variance (centre, then square) avoids E[x^2]-E[x]^2 cancellation
            std = np.sqrt(((X - mean) ** 2).mean(axis=0))
            # relative tolerance: a feature whose spread is pure rounding noise counts as constant
            constant = std <= 1e-12 * np.maximum(np.abs(mean), 1.0)
            self.mean_ = mean
            self.scale_ = np.where(constant, 0.0, 1.0 / np.where(constant, 1.0, std))
        return self

    def transform(self, data: RankData) -> RankData:
        if self.kind == "none":
            return data.with_features(data.X.copy())
        if self.kind == "querylevel":
            return data.with_features(query_min_max_scale(data.X, data.offsets))
        if self.mean_ is None or self.scale_ is None:
            raise RuntimeError("Normalizer('zscore') must be fitted before transform")
        if data.n_features != len(self.mean_):
            raise ValueError(f"fitted on {len(self.mean_)} features, got {data.n_features}")
        return data.with_features((data.X - self.mean_) * self.scale_)

    def fit_transform(self, train: RankData) -> RankData:
        return self.fit(train).transform(train)

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
