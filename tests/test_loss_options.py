"""Every loss declares what each of its options may be, once (its ``LOSSES`` entry), and a config's
options are checked against the declarations alone, before any job: the loss is never called, so
the config check imports no JAX and compiles no numba kernel, and a bad value is one line naming
the config key."""

from __future__ import annotations

import subprocess
import sys

import pytest

from rankstudy.losses import registry
from rankstudy.losses.registry import LOSSES, check_loss_options, loss_option_defaults as defaults, loss_options
from rankstudy.pipeline.config import check_method
from rankstudy.pipeline.errors import ConfigError
from rankstudy.rankers.conditional import OBJECTIVES, ConditionalRanker
from rankstudy.rankers.structrank import StructRank
from rankstudy.rankers.structsvm import STRUCTURED_LOSSES, StructSVMRanker
from rankstudy.util.params import Constraint, check_value


@pytest.mark.parametrize("name", sorted(LOSSES))
def test_every_loss_declares_exactly_the_options_its_function_takes(name):
    declared = LOSSES[name].options
    assert list(declared) == loss_options(name), "declare every option, in the signature's order, and no other"
    for option, constraints in declared.items():
        assert isinstance(constraints, list) and constraints, option
        assert all(c is None or isinstance(c, Constraint) for c in constraints), option


@pytest.mark.parametrize("name", sorted(LOSSES))
def test_every_default_passes_its_declaration(name):
    for option, default in defaults(name).items():
        check_value(option, default, LOSSES[name].options[option])


def test_checking_options_never_calls_the_loss(monkeypatch):
    """Every loss, given every option (at its default): nothing is called, only declarations read."""
    given = {name: defaults(name) for name in LOSSES}

    def never(self):
        raise AssertionError("the loss was loaded to check its options")

    monkeypatch.setattr(registry.Loss, "function", property(never))
    for name, options in given.items():
        check_loss_options(name, options)
    with pytest.raises(ValueError, match=r"k must be an integer >= 1 or null, got 0"):
        check_loss_options("smoothed_ndcg", {"k": 0})


def test_checking_options_imports_no_jax_and_compiles_no_numba_kernel():
    """The config check runs in the Snakemake process and every job's: the losses whose first call
    imports JAX (NeuralNDCG) or compiles numba kernels (RankSVM, the CDN, the swap sampler) are
    checked from their declarations; a numeric option does not even import the loss's module."""
    code = """if True:
        import sys
        from rankstudy.losses.registry import check_loss_options
        check_loss_options("neural_ndcg", {"k": 5, "temperature": 0.5, "sinkhorn_iterations": 20})
        check_loss_options("cdn", {"w1": 0.5, "degree": 2, "seed": 3})
        check_loss_options("mle", {"sample_size": 10, "restart_states": 2})
        check_loss_options("ranksvm", {})
        print(sorted(m for m in sys.modules if m.startswith("rankstudy.losses.") and m not in
                     ("rankstudy.losses.registry", "rankstudy.losses.options", "rankstudy.losses.groups",
                      "rankstudy.losses.padded")))
        check_loss_options("neural_ndcg", {"gain": "label"})
        check_loss_options("cdn", {"topology": "random", "backend": "numba"})
        check_loss_options("mle", {"restart_spread": "bads"})
        check_loss_options("exp_gain", {"gain": "map"})
        print(sorted(m for m in ("jax", "numba") if m in sys.modules))
    """
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split("\n")[:2] == ["[]", "[]"], out


@pytest.mark.parametrize("kind,loss,options,problem", [
    # losses whose options the config check used to find out by calling them once
    ("linear", "smoothed_ndcg", {"k": 0}, "must be an integer >= 1 or null, got 0"),
    ("linear", "smoothed_mrr", {"temperature": -1}, "must be a number > 0, got -1"),
    ("linear", "wpl", {"weight": "sqrtr"}, "unknown weight 'sqrtr'; valid: unit, r, sqrt_r"),
    ("linear", "pairwise", {"phi": "huber"}, "unknown phi 'huber'; valid: quadratic, hinge"),
    ("linear", "wub", {"gamma": "half"}, "must be a number > 0 or one of inv_pairs, got 'half'"),
    ("linear", "lambdaloss", {"sigma": 0}, "must be a number > 0, got 0"),
    ("linear", "listmle", {"seed": "x"}, "must be an integer >= 0, got 'x'"),
    ("linear", "listmle", {"seed": -1}, "must be an integer >= 0, got -1"),  # numpy's generators refuse it mid-fit
    ("linear", "ranknet", {"blocks": 3}, "unknown option 'blocks' of loss 'ranknet'; valid options: block_elements"),
    ("structsvm", "svm_combo", {"criteria": ["map", "map"]}, "must be a non-empty list of distinct names"),
    ("structsvm", "dorm", {"cut": 0}, "must be an integer >= 1 or null, got 0"),
])
def test_a_bad_option_is_one_line_naming_the_config_key(kind, loss, options, problem):
    with pytest.raises(ConfigError) as caught:
        check_method("M", {"kind": kind, "params": {"loss": loss, "loss_params": options}})
    message = str(caught.value)
    (option,) = options  # named as solver_params' are: methods.M.params.loss_params.OPTION
    assert message.startswith(f"config key methods.M.params.loss_params.{option}: {problem}"), message
    assert "\n" not in message


# a ranker's default that departs from its loss's on purpose: StructRank's CDN loss per CDN
# function, not the paper's sum (its module docstring says why)
DEPARTURES = {(StructRank, "reduction"): "mean"}


@pytest.mark.parametrize("ranker,losses", [(ConditionalRanker, sorted(OBJECTIVES)), (StructRank, ["cdn"]),
                                           (StructSVMRanker, sorted(STRUCTURED_LOSSES))])
def test_a_ranker_parameter_that_is_a_loss_option_is_the_loss_declaration(ranker, losses):
    """Its constraints are the loss's declared list itself (not a copy written again) and its
    default the loss function's, for every loss the ranker may fit that takes the option."""
    taken = 0
    for name, param in ranker.parameters.items():
        for loss in losses:
            if name not in LOSSES[loss].options:
                continue
            taken += 1
            assert param.constraints is LOSSES[loss].options[name], f"{ranker.kind}.{name}: {loss}'s declaration"
            default = DEPARTURES.get((ranker, name), defaults(loss)[name])
            assert param.default == default and type(param.default) is type(default), (ranker.kind, name, loss)
    assert taken, "the ranker passes its losses some options"
