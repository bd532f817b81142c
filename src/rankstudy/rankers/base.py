"""The ranker interface: small estimator objects with fit/predict, parameters as plain data.

Every ranker saves to one JSON file (``{"format", "version", "kind", "params", "state",
"history"}``) that :func:`rankstudy.rankers.registry.load_ranker` turns back into the right
class.
"""

from __future__ import annotations

import inspect
import json
import os
from typing import Any, ClassVar

import numpy as np

from rankstudy.features.featuresets import FeatureSet
from rankstudy.util import atomic

SAVE_FORMAT = "rankstudy.ranker"
SAVE_VERSION = 1


class NotFittedError(RuntimeError):
    pass


class Ranker:
    """Base class. Subclasses set ``kind``, take their parameters as keyword arguments of
    ``__init__`` (stored under the same names), and implement ``fit``, ``predict``,
    ``_get_state`` and ``_set_state`` (JSON-able fitted state).

    ``data_kind`` is the kind of split it ranks (:mod:`rankstudy.data.kinds`);
    ``featureset_types`` the feature-set types it can train on
    (:mod:`rankstudy.features.featuresets`), and :meth:`featureset_params` the parameters a
    feature set adds (the quadratic functional's pairs, for ``quad``). ``parallel`` rankers use
    the job's threads (:mod:`rankstudy.util.threads`)."""

    kind: ClassVar[str] = ""
    data_kind: ClassVar[str] = "letor"
    featureset_types: ClassVar[tuple[str, ...]] = ("first", "rho")
    # whether fit puts several threads to use (LightGBM): its train jobs then ask for more
    parallel: ClassVar[bool] = False

    def __init__(self) -> None:
        self.history_: list[dict] = []
        # the training objective at the start and at the end of fit ({"start", "final"}, lower
        # is better), for the "did it learn" check; None for rankers that minimise none they report
        self.objective_trace_: dict | None = None

    @classmethod
    def featureset_params(cls, featureset: FeatureSet, pairs: list[list[int]]) -> dict[str, Any]:
        """Parameters to add when training on ``featureset``, whose selected 0-based feature
        pairs are ``pairs``; none unless the feature set's products are left to the ranker."""
        return {}

    def fit(self, train, vali=None) -> "Ranker":
        raise NotImplementedError

    def predict(self, data) -> np.ndarray:
        raise NotImplementedError

    @classmethod
    def param_names(cls) -> list[str]:
        return [p for p in inspect.signature(cls.__init__).parameters if p != "self"]

    def get_params(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self.param_names()}

    def _get_state(self) -> dict:
        raise NotImplementedError

    def _set_state(self, state: dict) -> None:
        raise NotImplementedError

    def save(self, path: str | os.PathLike) -> None:
        """Write params, fitted state and history as one JSON file (atomically: temp + rename)."""
        doc = {
            "format": SAVE_FORMAT, "version": SAVE_VERSION, "kind": self.kind,
            "params": self.get_params(), "state": self._get_state(), "history": self.history_,
            "objective": self.objective_trace_,
        }
        # json writes floats as shortest round-trip reprs, so weights reload exactly
        atomic.write_text(path, json.dumps(doc))

    @classmethod
    def from_document(cls, doc: dict) -> "Ranker":
        """The ranker a saved document describes (``doc["kind"]`` must be this class's)."""
        ranker = cls(**doc["params"])
        ranker._set_state(doc["state"])
        ranker.history_ = doc["history"]
        ranker.objective_trace_ = doc.get("objective")
        return ranker

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items())
        return f"{type(self).__name__}({args})"
