"""The config's tune block: checked by the schema and the method check before any job, naming
the key; expanded into tuned methods (and their untuned twins) for the rest of the workflow."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

from rankstudy.pipeline.config import with_derived_defaults, check_config, check_method, load_schema, schema_problem, with_schema_defaults
from rankstudy.pipeline.errors import ConfigError
from rankstudy.pipeline.tuned import with_tuned_methods, tuned_from

REPO = Path(__file__).resolve().parents[1]
SCHEMA = load_schema(REPO)
BASE = yaml.safe_load((REPO / "config/config.yaml").read_text())


@pytest.mark.parametrize("tune, key", [
    ({"trials": 0}, "config key tune.trials: 0 is less than the minimum of 1"),
    ({"sampler": "grid"}, "config key tune.sampler: 'grid' is not one of ['tpe', 'random']"),
    ({"cpu_seconds": 0}, "config key tune.cpu_seconds: 0 is less than or equal to the minimum of 0"),
    ({"cpu_seconds": -5}, "config key tune.cpu_seconds"),
    ({"workers": 0}, "config key tune.workers"),
    ({"variants": ["best"]}, "config key tune.variants"),
    ({"budget": 3}, "config key tune: Additional properties are not allowed ('budget' was unexpected)"),
    ({"train_fraction": 0}, "config key tune.train_fraction: 0 is less than or equal to the minimum of 0"),
    ({"train_fraction": 1.5}, "config key tune.train_fraction: 1.5 is greater than the maximum of 1"),
])
def test_a_bad_budget_or_sampler_is_refused_naming_its_key(tune, key):
    config = copy.deepcopy(BASE)
    config["tune"] = tune
    assert schema_problem(config, SCHEMA).startswith(key)


def resolved(config: dict) -> dict:
    config = copy.deepcopy(config)
    config = with_schema_defaults(config, SCHEMA)  # the schema's defaults, the tune block's from their declarations
    config = with_derived_defaults(config)
    return config


def test_default_and_tuned_side_by_side_make_twins_right_after_each_method():
    config = resolved({**BASE, "tune": {"trials": 5, "variants": ["default", "tuned"], "methods": ["ranknet", "lambdamart"]}})
    assert config["run_methods"] == ["pointwise", "ranknet", "ranknet-tuned", "ranksvm", "listnet", "listmle",
                                     "lambdamart", "lambdamart-tuned"]
    twin = config["methods"]["lambdamart-tuned"]
    # the grid stays with the twin, and its first trial is what the untuned method selects on the fold
    assert twin["tune"] == {"sampler": "tpe", "trials": 5, "cpu_seconds": None, "workers": 1, "space": {},
                            "grid": {"num_leaves": [15, 31]}, "base_method": "lambdamart"}
    assert "grid" not in twin and twin["params"] == BASE["methods"]["lambdamart"]["params"]
    # a grid key the ranker declares no space for is a choice among its values (num_leaves has one)
    assert config["methods"]["ranknet-tuned"]["tune"]["space"] in ({"l2": {"choices": [1e-4, 1e-2, 1.0]}}, {})
    assert "tune" not in config["methods"]["ranknet"] and tuned_from("ranknet-tuned", config["methods"]) == "ranknet"
    for name in ("ranknet-tuned", "lambdamart-tuned"):
        check_method(name, config["methods"][name])


def test_a_method_overrides_the_budget_and_space_or_opts_out():
    methods = copy.deepcopy(BASE["methods"])
    methods["lambdamart"]["tune"] = {"trials": 3, "space": {"num_leaves": {"int": [4, 16]}, "lambda_l2": None}}
    methods["ranknet"]["tune"] = False
    config = resolved({**BASE, "methods": methods, "tune": {"trials": 10}})
    assert "tune" not in config["methods"]["ranknet"]
    tune = config["methods"]["lambdamart"]["tune"]
    assert tune["trials"] == 3 and tune["space"] == {"num_leaves": {"int": [4, 16]}, "lambda_l2": None}
    assert config["methods"]["pointwise"]["tune"]["trials"] == 10
    check_method("lambdamart", config["methods"]["lambdamart"])


def test_rankboost_runs_once_on_a_tuned_board_and_is_tuned_with_a_space_of_its_own(capsys):
    """RankBoost keeps its best round on validation, so n_rounds has no search space: a board-wide
    tune block runs it untuned, saying so; given tune.space, it is tuned like any method."""
    methods = {"rankboost": {"kind": "rankboost"}, "ranknet": copy.deepcopy(BASE["methods"]["ranknet"])}
    config = resolved({**BASE, "methods": methods, "tune": {"variants": ["default", "tuned"]}})
    assert config["run_methods"] == ["rankboost", "ranknet", "ranknet-tuned"]
    assert "'rankboost' (rankboost) declares no search space" in capsys.readouterr().err
    methods["rankboost"]["tune"] = {"space": {"n_rounds": {"int_log": [50, 1000]}}}
    config = resolved({**BASE, "methods": methods, "tune": {"variants": ["default", "tuned"]}})
    assert config["run_methods"] == ["rankboost", "rankboost-tuned", "ranknet", "ranknet-tuned"]
    check_method("rankboost-tuned", config["methods"]["rankboost-tuned"])


def test_tuning_problems_name_the_method_key():
    methods = copy.deepcopy(BASE["methods"])
    methods["lambdamart"]["tune"] = {"space": {"learning_rate": {"log_uniform": [0.0, 1.0]}}}
    config = resolved({**BASE, "methods": methods, "tune": {}})
    with pytest.raises(ConfigError, match=r"^config key methods.lambdamart.tune.space.learning_rate: log_uniform needs"):
        check_method("lambdamart", config["methods"]["lambdamart"])
    # beside its untuned twin, the problem is named where the user wrote it, not under lambdamart-tuned
    twins = resolved({**BASE, "methods": methods, "tune": {"variants": ["default", "tuned"]}})
    with pytest.raises(ConfigError, match=r"^config key methods.lambdamart.tune.space.learning_rate: log_uniform needs"):
        check_config(twins, REPO)
    with pytest.raises(ConfigError, match=r"config key methods.ranknet.tune: the study has no tune block"):
        methods = copy.deepcopy(BASE["methods"])
        methods["ranknet"]["tune"] = {"trials": 3}
        with_tuned_methods({**BASE, "methods": methods})
    with pytest.raises(ConfigError, match=r"config key methods.ranknet-tuned: the tuned variant of 'ranknet' takes"):
        methods = copy.deepcopy(BASE["methods"])
        methods["ranknet-tuned"] = methods["ranknet"]
        resolved({**BASE, "methods": methods, "tune": {"variants": ["default", "tuned"]}})
    with pytest.raises(ConfigError, match=r"config key tune.methods: 'nope' is not defined"):
        resolved({**BASE, "tune": {"methods": ["nope"]}})


def test_values_from_the_command_line_and_the_files_are_read_as_yaml_1_2():
    """`--config 'tune={trials: 3, cpu_seconds: null}'` was refused ("'null' is not of type
    'number', 'null'"), and an unsigned 1.0e300 (a string to PyYAML's YAML 1.1) was a number in one
    place and a string in another (issue 45)."""
    from rankstudy.pipeline.config import read_cli_values
    from rankstudy.pipeline.configfiles import yaml12_scalar, yaml_values

    config = copy.deepcopy(BASE)
    config["tune"] = {"trials": "3", "cpu_seconds": "null"}  # as Snakemake's BaseLoader gives them
    config = read_cli_values(config, SCHEMA)
    assert config["tune"] == {"trials": 3, "cpu_seconds": None} and schema_problem(config, SCHEMA) is None
    config["tune"]["cpu_seconds"] = "1.0e300"  # a config file's unsigned exponent, as PyYAML leaves it
    config = read_cli_values(config, SCHEMA)
    assert config["tune"]["cpu_seconds"] == 1e300
    assert yaml_values({"a": ["1.0e300", "1e-2", ".5", "~", "true", "0x1f", "l2", "-.inf"]}) == \
        {"a": [1e300, 0.01, 0.5, None, True, 31, "l2", float("-inf")]}
    assert yaml12_scalar("1.0e300") == float("1.0e300") == 1e300


@pytest.mark.parametrize("pruner, key", [
    ("asha", "config key tune.pruner: unknown pruner 'asha'; valid: none, median, successive_halving, hyperband"),
    ({"kind": "hyperband", "min_resource": 50, "max_resource": 10},
     "config key tune.pruner.min_resource: is 50, above max_resource 10"),
    ({"kind": "hyperband", "reduction_factor": 1}, "config key tune.pruner.reduction_factor: must be an integer >= 2"),
    ({"kind": "successive_halving", "reduction_factor": 1}, "config key tune.pruner.reduction_factor: must be"),
    ({"kind": "median", "min_resource": 3}, "config key tune.pruner.min_resource: is not a setting of the median pruner"),
    ({"kind": "median", "warmup_steps": -1}, "config key tune.pruner.warmup_steps: must be an integer >= 0"),
])
def test_a_bad_pruner_is_refused_before_any_job_naming_its_key(pruner, key):
    with pytest.raises(ConfigError) as caught:
        resolved({**BASE, "tune": {"pruner": pruner}})
    assert str(caught.value).startswith(key)


def test_a_pruner_is_resolved_with_its_defaults_and_a_method_may_set_its_own():
    methods = copy.deepcopy(BASE["methods"])
    methods["lambdamart"]["tune"] = {"pruner": {"kind": "hyperband", "min_resource": 10, "reduction_factor": 2}}
    methods["ranknet"]["tune"] = {"pruner": {"kind": "hyperband", "reduction_factor": 1}}
    config = resolved({**BASE, "methods": methods, "tune": {"pruner": "median"}})
    assert config["methods"]["pointwise"]["tune"]["pruner"] == {"kind": "median", "startup_trials": 5,
                                                                 "warmup_steps": 0, "interval_steps": 1}
    check_method("lambdamart", config["methods"]["lambdamart"])
    with pytest.raises(ConfigError, match=r"^config key methods.ranknet.tune.pruner.reduction_factor: must be"):
        check_method("ranknet", config["methods"]["ranknet"])
    assert "pruner" not in resolved({**BASE, "tune": {}})["methods"]["pointwise"]["tune"]


def test_the_tune_settings_are_declared_once_and_the_schema_built_from_them():
    """Each tune setting's bounds and default live in TUNE_PARAMS only: the schema file holds none
    of them, the schema in use has them (with the defaults at the study's block, without at a
    method's, whose unset key takes the study's), and TuneSettings' defaults are theirs."""
    from rankstudy.selection.settings import METHOD_SETTINGS, TUNE_PARAMS, TuneSettings

    written = yaml.safe_load((REPO / "workflow/schemas/config.schema.yaml").read_text())
    def method_tune(schema):
        return schema["properties"]["methods"]["additionalProperties"]["properties"]["tune"]["oneOf"][1]

    assert not set(TUNE_PARAMS) & set(written["properties"]["tune"]["properties"])
    assert not set(TUNE_PARAMS) & set(method_tune(written)["properties"])
    study = SCHEMA["properties"]["tune"]["properties"]
    assert {name: study[name]["default"] for name in TUNE_PARAMS} == {n: p.default for n, p in TUNE_PARAMS.items()}
    assert study["trials"] == {"type": "integer", "minimum": 1, "default": 20,
                               "description": TUNE_PARAMS["trials"].help}
    assert study["cpu_seconds"]["type"] == ["number", "null"] and study["cpu_seconds"]["exclusiveMinimum"] == 0
    own = method_tune(SCHEMA)["properties"]
    assert set(METHOD_SETTINGS) <= set(own) and not any("default" in own[name] for name in METHOD_SETTINGS)
    assert "workers" not in own
    defaults = TuneSettings()
    assert {name: getattr(defaults, name) for name in TUNE_PARAMS} == {n: p.default for n, p in TUNE_PARAMS.items()}
    config = copy.deepcopy(BASE)
    config["tune"] = {"methods": ["ranknet"]}
    config = with_schema_defaults(config, SCHEMA)
    assert {name: config["tune"][name] for name in TUNE_PARAMS} == {n: p.default for n, p in TUNE_PARAMS.items()}


@pytest.mark.parametrize("settings, message", [
    ({"trials": 0}, "tune.trials: must be an integer >= 1, got 0"),
    ({"trials": 2.5}, "tune.trials: must be an integer >= 1, got 2.5"),
    ({"sampler": "grid"}, "tune.sampler: unknown sampler 'grid'; valid: tpe, random"),
    ({"cpu_seconds": float("inf")}, "tune.cpu_seconds: must be a number > 0 or null, got inf"),
    ({"train_fraction": 0}, "tune.train_fraction: must be a number > 0 and <= 1, got 0"),
    ({"pruner": "sometimes"}, "tune.pruner"),
])
def test_the_jobs_check_the_tune_settings_by_their_declarations(settings, message):
    from rankstudy.selection.settings import TuneSettings, TuningError, check_settings

    with pytest.raises(TuningError) as caught:
        check_settings(TuneSettings(**settings))
    assert str(caught.value).startswith(message), str(caught.value)
