"""Every solver's settings, declared once: what each may be, its default, its tuning space
(:class:`rankstudy.util.params.Param`). Kept apart from the solvers so that checking a config
imports no optimiser (SciPy's L-BFGS, the QP library). A solver fills its settings from here
(:class:`Declared`); a ranker composes them (its ``solver_params``, the neural ranker's Adam
settings), and the docs list them from here.
"""

from __future__ import annotations

from rankstudy.evaluation.metrics import parse_metric
from rankstudy.util.params import (SEED, Choice, Choices, Integer, IntRange, LogUniform, Param, ParamError, Real, Text,
                                   check_value)

FEASIBILITY = ("project", "halve")
STEP_RULES = ("adagrad", "plain")
SCHEDULES = ("constant", "cosine", "step")

LBFGS = {
    "max_iter": Param(Integer(1), 200, help="iterations at most"),
    "tol": Param(Real(0), 1e-6, help="SciPy's ftol and gtol"),
}

CUTTING_PLANE = {
    "epsilon": Param(Real(0, low_open=True), 1e-3, help="the absolute violation tolerance"),
    "max_iter": Param(Integer(1), 500, help="iterations at most"),
    "qp_solver": Param(Text(what="a QP solver name qpsolvers knows"), "clarabel"),
    "rel_epsilon": Param([None, Real(0, low_open=True)], 0.01,
                         help="the violation tolerance relative to the objective's decrease (null: absolute only)"),
    "prune_after": Param([None, Integer(1)], 50, help="iterations a plane may sit at dual weight 0 (null: kept)"),
}

PROJECTED_SGD = {
    "step": Param(Real(0, low_open=True), 0.5, space=LogUniform(0.05, 5.0)),
    "decay": Param(Real(0, 1, low_open=True), 2 ** -0.5, help="the step's factor per epoch"),
    "epochs": Param(Integer(1), 10, space=IntRange(5, 40)),
    "l1_bound": Param([None, Real(0, low_open=True)], None, space=LogUniform(1.0, 1e3),
                      help="the L1 ball of the parameters (null: no bound)"),
    "max_halvings": Param(Integer(0), 30, help="halvings of an infeasible step before it is skipped"),
    "seed": SEED,
    "feasibility": Param(Choice(FEASIBILITY, "feasibility"), "project"),
    "step_rule": Param(Choice(STEP_RULES, "step_rule"), "adagrad"),
}

ADAM = {
    "learning_rate": Param(Real(0, low_open=True), 1e-3, space=LogUniform(1e-4, 1e-2)),
    "epochs": Param(Integer(1), 50, help="at most; early stopping may end sooner"),
    "batch_size": Param(Integer(1), 64, space=Choices([16, 32, 64, 128]), help="queries per step"),
    "weight_decay": Param(Real(0), 0.0, space=LogUniform(1e-5, 1e-1), help="AdamW's decoupled decay"),
    "schedule": Param(Choice(SCHEDULES, "schedule"), "constant"),
    "step_epochs": Param(Integer(1), 10),
    "gamma": Param(Real(0, 1, low_open=True), 0.1),
    "clip_norm": Param([None, Real(0, low_open=True)], None),
    "patience": Param([None, Integer(1)], 10, help="epochs without a better validation metric (null: never stop)"),
    "metric": Param(Text(parse_metric, what="a metric name such as ndcg@10"), "ndcg@10"),
    "max_list_length": Param([None, Integer(1)], None, help="longer training lists are sampled (null: whole)"),
    "seed": SEED,
}


class Declared:
    """A solver whose settings are its ``parameters`` (one of the dicts above): ``Solver(**given)``
    sets each given one, checked, and the others to their declared defaults."""

    name: str
    parameters: dict[str, Param]

    def __init__(self, **given) -> None:
        for key, value in settled(self.parameters, given, self.name).items():
            setattr(self, key, value)


def settled(parameters: dict[str, Param], given: dict, owner: str) -> dict:
    """``given`` checked against ``parameters`` (ParamError naming the first unknown or refused
    setting) and completed with the declared defaults, in the declared order."""
    unknown = sorted(set(given) - set(parameters))
    if unknown:
        raise ParamError(unknown[0], f"unknown {owner} setting {unknown[0]!r}; valid: {', '.join(parameters)}", owner=owner)
    for name, value in given.items():
        check_value(name, value, parameters[name].constraints, owner=owner)
    return {name: given[name] if name in given else param.fresh_default() for name, param in parameters.items()}
