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
from rankstudy.util.params import Param, ParamError, check_value
from rankstudy.util import atomic

SAVE_FORMAT = "rankstudy.ranker"
SAVE_VERSION = 1


class NotFittedError(RuntimeError):
    pass


class _CheckedParams(type):
    """Building a ranker checks its parameters first (:meth:`Ranker.check_params`), so every
    ranker, however it is built (config, test, model file), gets the one check, and ``__init__``
    only stores them; then the built ranker checks how its parts fit (:meth:`Ranker.check_parts`)."""

    def __call__(cls, *args, **kwargs):
        cls.check_names(kwargs)
        bound = inspect.signature(cls.__init__).bind(None, *args, **kwargs)
        bound.apply_defaults()
        cls.check_params({k: v for k, v in list(bound.arguments.items())[1:]})
        ranker = super().__call__(*args, **kwargs)
        ranker.check_parts()
        return ranker


def _declared_init(cls, declared: dict[str, Param]):
    """An ``__init__`` for ``cls`` made from its declarations: it takes each declared parameter
    (by keyword, or by position in declaration order), a fresh copy of the default when it is not
    given, and only stores them."""
    signature = inspect.Signature(
        [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
        + [inspect.Parameter(name, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=p.default)
           for name, p in declared.items()])

    def __init__(self, *args, **kwargs):
        given = signature.bind(self, *args, **kwargs).arguments
        super(cls, self).__init__()
        for name, param in declared.items():
            setattr(self, name, given[name] if name in given else param.fresh_default())

    __init__.__signature__ = signature
    __init__.__qualname__ = f"{cls.__qualname__}.__init__"
    return __init__


class Ranker(metaclass=_CheckedParams):
    """Base class. Subclasses set ``kind``, declare their parameters once in ``parameters``
    (``{name: Param(constraints, default, space=...)}``, :mod:`rankstudy.util.params`: what
    each may be, its default and its tuning space; ``__init__`` is made from them and stores
    each value under its name), and implement ``fit``, ``predict``, ``_get_state`` and
    ``_set_state`` (JSON-able fitted state). ``parameter_constraints`` is derived from the
    declarations, never written by a class.

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
    # {parameter: [constraint, ...]}, from ``parameters``: a value is valid when one of them
    # accepts it (None: null is)
    parameter_constraints: ClassVar[dict[str, list]] = {}
    # {parameter: Param}: the one declaration of each parameter (sets parameter_constraints)
    parameters: ClassVar[dict[str, Param]] = {}
    # the library it wraps ("LightGBM"), whose own defaults its Params' ``library`` give: rankstudy's differ
    library: ClassVar[str] = ""

    def __init_subclass__(cls, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        if "parameter_constraints" in cls.__dict__:  # the form before Param: one declaration only
            raise TypeError(f"{cls.__name__}: declare its parameters as `parameters = {{name: Param(...)}}` "
                            f"(rankstudy.util.params); parameter_constraints is made from them")
        declared = cls.__dict__.get("parameters")
        if declared is None:
            return
        for name, param in declared.items():
            param.check_declaration(name, cls.kind or cls.__name__)
        cls.parameter_constraints = {name: param.constraints for name, param in declared.items()}
        if "__init__" not in cls.__dict__:
            cls.__init__ = _declared_init(cls, declared)

    @classmethod
    def search_space(cls, fixed: dict | None = None) -> dict:
        """The declared tuning space, ``{name: Space}``: every parameter with a ``space`` whose
        ``tune_when`` holds for ``fixed`` (the method's other parameters, defaults filled in)."""
        values = {name: p.default for name, p in cls.parameters.items()} | dict(fixed or {})
        return {name: p.space for name, p in cls.parameters.items()
                if p.space is not None and all(values.get(k) == v for k, v in p.tune_when.items())}

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
    def check_names(cls, names) -> None:
        """ParamError naming the first of ``names`` that is not a parameter of this ranker: the one
        check of names, made when a ranker is built, by the config check and by tuning's space."""
        valid = cls.param_names()
        for name in names:
            if name not in valid:
                raise ParamError(name, f"unknown parameter {name!r} of {cls.kind!r}; valid parameters: "
                                       f"{', '.join(valid)}", owner=cls.kind)

    @classmethod
    def part_parameters(cls, namespace: str, params: dict[str, Any]) -> dict[str, Param]:
        """The declared settings of the part the ranker takes under ``namespace`` (a scored ranker's
        ``solver_params``: its solver's), for its parameters ``params``; none by default."""
        return {}

    @classmethod
    def part_name(cls, namespace: str, params: dict[str, Any]) -> str:
        """What the part under ``namespace`` is for ``params``, for a message ("the lbfgs solver's own settings")."""
        return namespace

    @classmethod
    def declaration(cls, name: str, params: dict[str, Any]) -> Param:
        """The declaration of ``name``: a parameter, or ``NAMESPACE.KEY`` a setting of one of its
        parts (:meth:`part_parameters`, for ``params``). ParamError naming it when there is none."""
        namespace, dot, key = name.partition(".")
        if not dot:
            cls.check_names([name])
            return cls.parameters.get(name) or Param(cls.parameter_constraints.get(name, []))
        cls.check_names([namespace])
        filled = {n: p.default for n, p in cls.parameters.items()} | dict(params)
        parts = cls.part_parameters(namespace, filled)
        if key not in parts:
            raise ParamError(name, f"unknown setting {key!r} of {namespace} ({cls.part_name(namespace, filled)}); "
                                   f"valid: {', '.join(parts) or 'none'}", owner=cls.kind)
        return parts[key]

    @classmethod
    def check_params(cls, params: dict[str, Any]) -> None:
        """ParamError naming the first parameter that its constraints refuse, then whatever
        :meth:`check_combination` refuses. Called before ``__init__`` runs."""
        for name, value in params.items():
            constraints = cls.parameter_constraints.get(name)
            if constraints is not None:
                check_value(name, value, constraints, owner=cls.kind)
        try:
            cls.check_combination(params)
        except ParamError as exc:
            if not exc.owner:
                raise ParamError(exc.param, exc.problem, owner=cls.kind) from None
            raise

    @classmethod
    def check_combination(cls, params: dict[str, Any]) -> None:
        """Relations between valid parameters that cannot hold (ParamError naming one of them)."""

    def check_parts(self) -> None:
        """Checks of the built ranker's parts (a scored ranker: its solver fits its loss)."""

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
