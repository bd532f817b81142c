"""Every scorer declares its settings once (its module's ``PARAMETERS``, ``DEFAULTS``): its
constructor and its module's functions default from them, a ranker that exposes a setting takes
the very declaration, and a bad value is refused by the ranker's declaration (one line naming the
config key), not by a check of the scorer's own."""

from __future__ import annotations

import inspect

import pytest

from rankstudy.pipeline.config import check_method
from rankstudy.pipeline.errors import ConfigError
from rankstudy.rankers.registry import RANKERS
from rankstudy.scorers import attention, kernel, linear, mlp, quadratic, separate
from rankstudy.util.params import ParamError

# each module's scorer class and the functions of its own that take some of its settings
SCORERS = {
    separate: [separate.SeparateScorer, separate.f1, separate.f2, separate.separate_scores],
    linear: [linear.LinearScorer],
    quadratic: [quadratic.QuadraticScorer, quadratic.quadratic_scores, quadratic.quadratic_vjp],
    kernel: [kernel.NadarayaWatsonScorer],
    mlp: [mlp.MLPScorer],
    attention: [attention.AttentionScorer],
}
# ranker kind -> the scorer modules whose settings it exposes (the neural ranker composes copies
# tuned per scorer: tests/test_neural.py checks those)
EXPOSED = {"separate": [separate], "linear": [linear, quadratic], "structrank": [kernel, linear],
           "structsvm": [linear], "conditional": [linear]}


def signature_defaults(function) -> dict:
    return {p.name: p.default for p in inspect.signature(function).parameters.values()
            if p.default is not inspect.Parameter.empty}


@pytest.mark.parametrize("module", SCORERS, ids=lambda m: m.__name__.rsplit(".", 1)[-1])
def test_a_scorers_signature_defaults_are_its_declared_defaults(module):
    assert module.DEFAULTS == {name: p.default for name, p in module.PARAMETERS.items()}
    for function in SCORERS[module]:
        found = signature_defaults(function)
        taken = {name: found[name] for name in module.PARAMETERS if name in found}
        if function is SCORERS[module][0]:  # the scorer takes every setting it declares
            assert function.parameters is module.PARAMETERS
            assert set(taken) == set(module.PARAMETERS), function
        # a list default is a tuple in a signature (mlp's hidden), so that it is never shared
        assert {k: list(v) if isinstance(v, tuple) else v for k, v in taken.items()} == \
               {k: module.DEFAULTS[k] for k in taken}, function


@pytest.mark.parametrize("kind", EXPOSED)
def test_a_ranker_takes_a_scorers_setting_as_the_very_declaration(kind):
    declared = RANKERS[kind].parameters
    for module in EXPOSED[kind]:
        for name in set(declared) & set(module.PARAMETERS):
            assert declared[name] is module.PARAMETERS[name], f"{kind}.{name} is declared again"
    # the quadratic scorer's bias is the linear one's
    assert quadratic.PARAMETERS["intercept"] is linear.PARAMETERS["intercept"]


def test_the_separate_ranker_declares_the_scorers_settings_and_passes_them_on():
    ranker_class = RANKERS["separate"]
    assert all(ranker_class.parameters[name] is param for name, param in separate.PARAMETERS.items())
    values = {"functional": "f2", "activation": "sigmoid", "d": 3, "tau": 2.5, "init_scale": 0.3}
    scorer = ranker_class(**values).make_scorer()
    assert {name: getattr(scorer, name) for name in values} == values
    defaults = ranker_class().make_scorer()
    assert {name: getattr(defaults, name) for name in separate.DEFAULTS} == separate.DEFAULTS


def test_the_neural_rankers_activation_defaults_to_the_default_scorers():
    """The ranker's activation takes every scorer's names (each scorer checks its own), so it is
    its own declaration; its default is the mlp scorer's, read from there."""
    neural = RANKERS["neural"]
    assert neural.parameters["scorer"].default == mlp.MLPScorer.name
    assert neural.parameters["activation"].default == mlp.DEFAULTS["activation"]


def test_the_scorer_settings_rankers_pass_on():
    quadratic_ranker = RANKERS["linear"](functional="quadratic", pairs=[[0, 1]], chunk_rows=37)
    assert quadratic_ranker.make_scorer().chunk_rows == 37
    assert RANKERS["linear"](functional="quadratic", pairs=[[0, 1]]).make_scorer().chunk_rows == \
           quadratic.DEFAULTS["chunk_rows"]
    assert RANKERS["structrank"]().chunk_rows == kernel.DEFAULTS["chunk_rows"]


@pytest.mark.parametrize("kind, params, key, problem", [
    ("separate", {"tau": 0.0}, "tau", "must be a number > 0, got 0.0"),
    ("separate", {"d": 0}, "d", "must be an integer >= 1, got 0"),
    ("separate", {"d": 2.5}, "d", "must be an integer >= 1, got 2.5"),
    ("separate", {"init_scale": -1}, "init_scale", "must be a number > 0, got -1"),
    ("separate", {"functional": "f3"}, "functional", "unknown functional 'f3'; valid: f1, f2"),
    ("separate", {"activation": "relu"}, "activation", "unknown activation 'relu'; valid: sigmoid, tanh"),
    ("linear", {"functional": "quadratic", "pairs": [[0, 1]], "chunk_rows": 0}, "chunk_rows",
     "must be an integer >= 1, got 0"),
    ("structrank", {"chunk_rows": 0}, "chunk_rows", "must be an integer >= 1, got 0"),
])
def test_a_bad_scorer_setting_is_one_line_naming_the_config_key(kind, params, key, problem):
    with pytest.raises(ConfigError) as caught:
        check_method("M", {"kind": kind, "params": params})
    message = str(caught.value)
    assert message == f"config key methods.M.params.{key}: {problem}"
    with pytest.raises(ParamError) as built:  # building the ranker: the same declaration refuses it
        RANKERS[kind](**params)
    assert built.value.param == key


def test_the_quadratic_functions_check_chunk_rows_by_the_declaration():
    """They are called directly (benchmarks), without a ranker's check."""
    import numpy as np

    X = np.ones((3, 2))
    with pytest.raises(ParamError, match="chunk_rows must be an integer >= 1, got 0"):
        quadratic.quadratic_scores(X, [[0, 1]], np.zeros(2), np.zeros(1), chunk_rows=0)
    with pytest.raises(ParamError, match="chunk_rows must be an integer >= 1, got 0"):
        quadratic.quadratic_vjp(X, [[0, 1]], np.zeros(3), chunk_rows=0)
