"""A method spec, the config's ``{kind, params, grid}``, becomes a ranker here, and only here:
the config check (before any job) and the train job both go through these functions, and the
ranker's declared ``parameter_constraints`` (:mod:`rankstudy.util.params`) say what each
value may be.

Problems are :class:`SpecError`, whose ``key`` is relative to the method (``params.l2``,
``grid.num_leaves``, ``kind``), so the pipeline can name the config key.
"""

from __future__ import annotations

import itertools

from rankstudy.data.rankdata import REL_THRESHOLD
from rankstudy.util.params import ParamError, check_value, read_value, with_values
from rankstudy.rankers.registry import RANKERS, make_ranker, ranker_class

# set once per run, for every method that takes them (training_params): their config keys
RUN_PARAMS = {"seed": "seed", "rel_threshold": "evaluation.rel_threshold"}


class SpecError(ValueError):
    def __init__(self, key: str, problem: str) -> None:
        self.key, self.problem = key, problem
        super().__init__(f"{key}: {problem}" if key else problem)


def training_params(spec: dict, seed: int, rel_threshold: float) -> dict:
    """A method's parameters as its ranker is built with them: the method's ``params``, plus the
    run's ``seed`` and ``evaluation.rel_threshold`` for rankers that take them (one relevance
    threshold per run: a method cannot set its own)."""
    names = ranker_class(spec["kind"]).param_names()
    run = {"seed": seed, "rel_threshold": rel_threshold}
    return {**{k: v for k, v in run.items() if k in names}, **(spec.get("params") or {})}


def canonical_spec(spec: dict) -> dict:
    """One spelling of a method spec, so two that set the same values compare equal (the pipeline
    hands it to the train job as a param, and Snakemake compares params as text): ``kind``, then
    ``params`` in the ranker's declared order (``loss_params``' and ``solver_params``' options sorted), then ``grid`` as
    written (its order is the candidates' order, which breaks ties in selection), then any other
    key as given; an empty ``params`` or ``grid`` is the same as none. The declared order is the
    order the default config writes its methods in, so their params keep their old spelling."""
    names = ranker_class(spec["kind"]).param_names() if spec.get("kind") in RANKERS else []
    out = {"kind": spec.get("kind")}
    params = spec.get("params") or {}
    if params:
        order = [n for n in names if n in params] + sorted(set(params) - set(names), key=str)
        out["params"] = {n: dict(sorted(params[n].items())) if n in ("loss_params", "solver_params") and isinstance(params[n], dict)
                         else params[n] for n in order}
    if spec.get("grid"):
        out["grid"] = spec["grid"]
    out.update({k: v for k, v in spec.items() if k not in ("kind", "params", "grid")})
    return out


def read_spec_values(spec):
    """``spec`` with the strings in ``params`` and ``grid`` read as the type the parameter wants (a
    new mapping; ``spec`` is left as it is): values set through ``snakemake --config`` arrive as
    strings (``sample_size: '10'``), and YAML 1.1 reads ``1e-2`` as one. A string the parameter
    takes as it is stays a string."""
    if not isinstance(spec, dict) or spec.get("kind") not in RANKERS:
        return spec  # check_spec names the problem
    cls = RANKERS[spec["kind"]]
    constraints = cls.parameter_constraints
    params, grid = spec.get("params"), spec.get("grid")
    out = dict(spec)
    if isinstance(params, dict):
        out["params"] = {name: read_value(value, constraints[name]) if name in constraints else value
                         for name, value in params.items()}
    if isinstance(grid, dict):
        read = out.get("params")  # as the parameters read, which a part's declaration may depend on
        out["grid"] = {name: _read_grid_values(cls, name, values, read) for name, values in grid.items()}
    return out


def _read_grid_values(cls, name: str, values, params):
    if not isinstance(values, list):
        return values
    try:  # a dotted key is a part's setting (solver_params.learning_rate): its declaration's
        wanted = cls.declaration(name, params if isinstance(params, dict) else {}).constraints
    except ParamError:
        return values  # check_names_and_values names it
    return [read_value(v, wanted) for v in values]


def grid_candidates(grid: dict | None) -> list[dict]:
    """Cartesian product of the grid's value lists, in config order; [{}] for no grid."""
    grid = grid or {}
    keys = list(grid)
    return [dict(zip(keys, values)) for values in itertools.product(*(grid[k] for k in keys))]


def check_spec(spec: dict, seed: int = 0, rel_threshold: float = REL_THRESHOLD) -> None:
    """SpecError naming the first problem of a method spec: an unknown kind or parameter, a value
    its constraints refuse (each grid value alone), or a combination the ranker refuses, a loss
    option among them (every grid candidate is built, which checks them as the train job will)."""
    check_names_and_values(spec)
    kind = spec["kind"]
    base = training_params(spec, seed, rel_threshold)
    for candidate in grid_candidates(spec.get("grid")):
        params = with_values(base, candidate)  # a dotted key sets one setting of a part
        try:
            make_ranker(kind, params)
        except ParamError as exc:
            section = "grid" if exc.param in candidate else "params"
            raise SpecError(f"{section}.{exc.param}" if exc.param else "", exc.problem) from None
        except (TypeError, ValueError) as exc:
            raise SpecError("", str(exc)) from None


def check_names_and_values(spec: dict) -> None:
    """SpecError naming the first unknown kind or parameter of a method spec, or a value its
    constraints refuse (each grid value alone): what can be checked of a part of a method (a
    ``method_defaults`` entry) without the rest."""
    kind = spec.get("kind")
    if kind not in RANKERS:
        raise SpecError("kind", f"unknown kind {kind!r}; valid kinds: {', '.join(sorted(RANKERS))}")
    cls = RANKERS[kind]
    for section in ("params", "grid"):
        given = spec.get(section) or {}
        if not isinstance(given, dict):
            raise SpecError(section, f"must be a mapping of parameter names, got {given!r}")
        for name, value in given.items():
            if name in RUN_PARAMS:
                raise SpecError(f"{section}.{name}", f"set once for the whole run, as config key "
                                                     f"{RUN_PARAMS[name]}; remove it from the method")
            try:
                if section == "grid":  # a grid key may name a part's setting: solver_params.learning_rate
                    constraints = cls.declaration(name, spec.get("params") or {}).constraints or [_ANY]
                else:
                    cls.check_names([name])
                    constraints = cls.parameter_constraints.get(name, [_ANY])
            except ParamError as exc:
                raise SpecError(f"{section}.{name}", exc.problem) from None
            values = value if section == "grid" else [value]
            if section == "grid" and (not isinstance(value, list) or not value):
                raise SpecError(f"grid.{name}", f"must be a non-empty list of values, got {value!r}")
            for v in values:
                try:
                    check_value(name, v, constraints)
                except ParamError as exc:
                    raise SpecError(f"{section}.{name}", exc.problem) from None


class _Any:
    def accepts(self, value) -> bool:
        return True


_ANY = _Any()
