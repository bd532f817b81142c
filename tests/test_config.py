"""The run configuration: schema validation and the name checks done at workflow start."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

from rankstudy.data.registry import RegistryError
from rankstudy.features.featuresets import FeatureSet, featuresets_from_config
from rankstudy.pipeline.config import ConfigError, with_derived_defaults, check_config, read_config_files, check_method, \
    load_schema, own_methods, read_cli_values, schema_problem, with_schema_defaults
from rankstudy.reporting import paper_tables

REPO = Path(__file__).resolve().parents[1]
SCHEMA = load_schema(REPO)


@pytest.fixture
def config():
    return yaml.safe_load((REPO / "config/config.yaml").read_text())


def test_default_config_is_valid(config):
    with_schema_defaults(copy.deepcopy(config), SCHEMA)
    settings = check_config(config, REPO)
    assert list(settings.featuresets) == ["first", "rho0.10"]
    assert settings.baseline == "ranknet [first]"


def test_schema_rejects_unknown_key_and_bad_value(config):
    with pytest.raises(ConfigError, match="nosuchkey"):
        with_schema_defaults({**config, "nosuchkey": 1}, SCHEMA)
    bad = copy.deepcopy(config)
    bad["features"]["normalization"] = "minmax"
    with pytest.raises(ConfigError, match="minmax"):
        bad = with_schema_defaults(bad, SCHEMA)


@pytest.mark.parametrize("edit, message", [
    (lambda c: c["methods"]["ranknet"].update(kind="svm"), r"methods\.ranknet\.kind.*valid kinds: adarank, catboost, conditional, coordinate_ascent, lambdamart, linear"),
    (lambda c: c["methods"]["ranknet"]["params"].update(loss="hinge"), r"methods\.ranknet\.params\.loss: unknown loss 'hinge'.*listmle"),
    (lambda c: c["methods"]["ranknet"]["params"].update(solver="newton"),
     r"methods\.ranknet\.params\.solver: unknown solver 'newton'; valid: adam, cutting_plane, lbfgs, projected_sgd"),
    (lambda c: c["methods"]["ranknet"]["grid"].update(solver=["lbfgs", "newton"]), r"methods\.ranknet\.grid\.solver: unknown solver 'newton'"),
    (lambda c: c["methods"]["ranknet"]["grid"].update(C=[1]), r"methods\.ranknet\.grid\.C: unknown parameter 'C' of 'linear'"),
    (lambda c: c.update(datasets=["MQ2009"]), r"unknown data set 'MQ2009'.*MQ2008"),
    (lambda c: c["evaluation"].update(metrics=["ndcg@x"]), r"evaluation\.metrics"),
    (lambda c: c["report"].update(baseline="nomethod"), r"report\.baseline"),
    (lambda c: c["features"].update(first_order=False, rho=[]), r"no feature set"),
    (lambda c: c["methods"]["ranknet"]["params"].update(loss="wpl", loss_params={"weight": "sqrtr"}),
     r"methods\.ranknet.*sqrtr.*sqrt_r"),
    (lambda c: c["methods"]["ranknet"]["params"].update(loss="pairwise", loss_params={"phi": "huber"}),
     r"methods\.ranknet.*huber.*logistic"),
    (lambda c: c["methods"]["ranknet"]["params"].update(group="median"), r"methods\.ranknet.*median.*geomean"),
    (lambda c: c["methods"]["ranknet"]["params"].update(functional="cubic"), r"methods\.ranknet.*cubic.*quadratic"),
    (lambda c: c.update(run_methods=["ranknet", "nosuch"]), r"run_methods.*nosuch"),
])
def test_wrong_names_fail_with_the_key_and_valid_names(config, edit, message):
    edit(config)
    with pytest.raises(ConfigError, match=message):
        check_config(config, REPO)


def test_rho_sweep_gives_one_featureset_per_threshold():
    sets = featuresets_from_config({"first_order": False, "rho": [0.0, 0.1, 0.2], "quadratic_rho": [0.3]})
    assert [f.name for f in sets] == ["rho0.00", "rho0.10", "rho0.20", "quad0.30"]
    assert [f.type for f in sets] == ["rho", "rho", "rho", "quad"] and sets[1].threshold == 0.1
    assert FeatureSet.from_dict(sets[3].to_dict()) == sets[3] and sets[3].quadratic and not sets[3].materialised


@pytest.mark.parametrize("bad", [dict(type="second"), dict(type="first", threshold=0.1), dict(type="rho")])
def test_featureset_types_are_checked(bad):
    with pytest.raises(ValueError):
        FeatureSet(**bad)


@pytest.mark.parametrize("study", sorted((REPO / "config/studies").glob("*.yaml")), ids=lambda p: p.stem)
def test_study_configs_are_valid_over_the_defaults(study):
    """A study file is passed with --configfile, so Snakemake merges it over config/config.yaml;
    the study's own methods replace the default study's (own_methods, as the Snakefile does)."""
    from snakemake.utils import update_config

    config = yaml.safe_load((REPO / "config/config.yaml").read_text())
    given = yaml.safe_load(study.read_text())
    update_config(config, given)
    config = own_methods(config, given)
    check_paper_section(config)


def check_paper_section(config: dict) -> None:
    with_schema_defaults(copy.deepcopy(config), SCHEMA)
    settings = check_config(config, REPO)
    if "paper" not in config:
        return  # a study without the paper's numbers renders only the comparison tables

    cells = paper_tables.cells(config["paper"])
    systems = {f"{m} [{f}]" for m in config.get("run_methods") or config["methods"] for f in settings.featuresets}
    if config["paper"].get("layout", "cells") == "datasets":
        # every data set of the paper's table side by side: each published number has its row and
        # column in the config, and every column has a row of ours; rows the paper only quotes
        # (methods we do not run) are allowed
        published = paper_tables.load_published(REPO / config["paper"]["reference"], config["paper"]["table"])
        assert set(zip(published["row"], published["column"])) <= set(zip(cells["row"], cells["column"]))
        for column, part in cells.groupby("column"):
            assert set(part["system"]) & systems, f"paper column {column!r} has no system of ours"
        return
    published = paper_tables.load_published(REPO / config["paper"]["reference"], config["paper"]["table"],
                                             config["paper"].get("dataset"))
    # every cell of ours is a published cell of the paper's table (a published row may be a method we do
    # not have: LETOR's AdaRank)
    assert set(zip(cells["row"], cells["column"])) <= set(zip(published["row"], published["column"]))
    assert set(cells["system"]) <= systems


DUBEY_ROWS = ["SVMmap", "RankBoost", "RankSVM", "ListNet", "BoltzRank2", "MLE", "ExpGain_AUC", "ExpGain_MAP",
              "ExpGain_NDCG", "L3_AUC", "L3_MAP", "L3_NDCG", "ConvexLoss_AUC", "ConvexLoss_MAP", "ConvexLoss_NDCG"]


def test_datasets_layout_allows_rows_the_paper_only_quotes(config):
    """Dubey et al.'s Figure 3 quotes ListNet and BoltzRank2 from another paper: the datasets layout
    takes rows that name no method of ours, while the cells layout keeps requiring every row."""
    config["methods"] = {name: copy.deepcopy(config["methods"]["ranknet"])
                         for name in DUBEY_ROWS if name not in ("ListNet", "BoltzRank2")}
    config["run_methods"] = list(config["methods"])
    config["report"]["baseline"] = "SVMmap"
    config["paper"] = {"reference": "config/reference/dubey2009-published.csv", "table": 3, "label": "Figure 3",
                       "layout": "datasets", "rows": {r: r for r in DUBEY_ROWS},
                       "columns": {"MAP": "map", "NDCG@1": "ndcg@1", "NDCG@5": "ndcg@5", "NDCG@10": "ndcg@10"},
                       "system": "{row} [first]", "metric": "{column}"}
    check_paper_section(config)
    with pytest.raises(AssertionError):
        check_paper_section({**config, "paper": {**config["paper"], "layout": "cells"}})
    with pytest.raises(ConfigError, match="bogus"):
        with_schema_defaults({**config, "paper": {**config["paper"], "layout": "bogus"}}, SCHEMA)


@pytest.mark.parametrize("given, folds", [(["3", "4"], [3, 4]), ([1, 2], [1, 2]), ([1, "2"], [1, 2]), (["12"], [12])])
def test_cli_folds_are_brought_to_a_list_of_ints(config, given, folds):
    """`--config 'folds=[3,4]'` arrives as ['3', '4']."""
    config["folds"] = given
    config = read_cli_values(config)
    assert config["folds"] == folds


@pytest.mark.parametrize("given, hint", [
    (3, r"bare value 3, which is ambiguous; write a list: \[3\] for fold 3 alone, \[1, 2, 3\] for the first 3"),
    (12, r"bare value 12, which is ambiguous; write a list: \[12\] for fold 12 alone"),
    ("12", r"bare value '12', which is ambiguous; write a list: \[12\] for fold 12 alone"),
    ("3", r"bare value '3'"),
    ({"a": 1}, r"got \{'a': 1\}"), (["x"], r"'x' in \['x'\] is not a fold number"),
    ([1.5], r"1\.5 in \[1\.5\] is not a fold number"), ([True], "not a fold number"), (None, "got None"),
    ([], r"got \[\]"), (["0"], "fold 0 in .*numbered from 1"),
    (["1", "1"], r"fold 1 is listed more than once .*count twice"),
])
def test_folds_that_are_not_a_list_of_fold_numbers_fail_naming_the_key_and_form(config, given, hint):
    """`folds: 3` reads as fold 3 to some and as three folds to others (the registry's `folds` is a
    count), "12" as fold 12 or folds 1 and 2: a bare value is refused, as is a repeated fold."""
    config["folds"] = given
    with pytest.raises(ConfigError, match=r"^config key folds: (got the )?.*" + hint) as err:
        config = read_cli_values(config)
    assert "--config 'folds=[1,2,3]'" in str(err.value) and "folds: [1, 2, 3]" in str(err.value)


@pytest.mark.parametrize("folds", [3, "12", [1, 1]])
def test_check_config_alone_refuses_bad_folds_too(config, folds):
    """Called without read_cli_values (from Python): a ConfigError, not a TypeError or [1, 2]."""
    config["folds"] = folds
    with pytest.raises(ConfigError, match="config key folds"):
        check_config(config, REPO)


def test_folds_beyond_the_data_sets_folds_name_the_valid_ones(config):
    config.update(datasets=["Yahoo-Set1"], folds=[1, 2])
    with pytest.raises(ConfigError, match=r"\[2\] out of range for 'Yahoo-Set1', which has 1 fold\(s\); "
                                          r"expected a list of fold numbers within 1\.\.1, e\.g\. folds: \[1\]"):
        check_config(config, REPO)


def test_schema_refuses_repeated_folds(config):
    with pytest.raises(ConfigError, match="folds"):
        with_schema_defaults({**config, "folds": [1, 1]}, SCHEMA)


MY_DATA = {"MyData": {"source": "local", "folder": "MQ2008", "n_features": 46, "labels": [0, 2], "folds": 5,
                      "layout": "Fold{fold}/{split}.txt"}}


def toy_files(data_root: Path) -> Path:
    """MyData's split files (empty: only their presence is checked before a run)."""
    for fold in range(1, 6):
        folder = data_root / "MQ2008" / f"Fold{fold}"
        folder.mkdir(parents=True, exist_ok=True)
        for split in ("train", "vali", "test"):
            (folder / f"{split}.txt").touch()
    return data_root


def test_a_local_data_set_not_under_data_root_fails_before_any_job_naming_the_folder(config, tmp_path):
    extra = tmp_path / "my-datasets.yaml"
    extra.write_text(yaml.safe_dump(MY_DATA))
    config.update(datasets=["MyData"], registry_extra=str(extra), data_root=str(tmp_path / "nowhere"))
    with pytest.raises(ConfigError, match=rf"data_root: data set 'MyData' has no train file for fold 1 in "
                                          rf"{tmp_path}/nowhere/MQ2008"):
        check_config(config, REPO)


@pytest.mark.parametrize("form", ["string", "list"])
def test_registry_extra_merges_a_users_data_sets_over_the_shipped_registry(config, tmp_path, form):
    extra = tmp_path / "my-datasets.yaml"
    extra.write_text(yaml.safe_dump(MY_DATA))
    config.update(datasets=["MyData"], registry_extra=str(extra) if form == "string" else [str(extra)],
                  data_root=str(toy_files(tmp_path / "data")))
    config = read_cli_values(config)
    with_schema_defaults(copy.deepcopy(config), SCHEMA)
    settings = check_config(config, REPO)
    assert settings.registry["MyData"]["source"] == "local" and "MQ2008" in settings.registry
    assert settings.registry_extra == (extra,)
    config["datasets"] = ["YourData"]
    with pytest.raises(ConfigError, match=r"unknown data set 'YourData'.*MyData.*my-datasets\.yaml"):
        check_config(config, REPO)


def test_registry_extra_relative_to_the_workflow_and_its_errors(config, tmp_path):
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "datasets.yaml").write_text((REPO / "config/datasets.yaml").read_text())
    (tmp_path / "mine.yaml").write_text(yaml.safe_dump(MY_DATA))
    config.update(datasets=["MyData"], registry_extra="mine.yaml", data_root=str(toy_files(tmp_path / "data")))
    assert check_config(config, tmp_path).registry_extra == (tmp_path / "mine.yaml",)
    (tmp_path / "mine.yaml").write_text(yaml.safe_dump({"MyData": {**MY_DATA["MyData"], "labels": [0, 2.5]}}))
    with pytest.raises(RegistryError, match=r"mine\.yaml: data set 'MyData', key 'labels'"):
        check_config(config, tmp_path)
    config["registry_extra"] = "nope.yaml"
    with pytest.raises(RegistryError, match=r"registry not found: .*nope\.yaml"):
        check_config(config, tmp_path)


def test_cli_bare_names_become_lists(config):
    config.update(datasets="MQ2008", run_methods="ranknet")
    config = read_cli_values(config)
    assert config["datasets"] == ["MQ2008"] and config["run_methods"] == ["ranknet"]


@pytest.mark.parametrize("spec, message", [
    ({"kind": "conditional", "params": {"loss": "mle", "restart_skew": "abc"}},
     "config key methods.M.params.restart_skew: must be a number, got 'abc'"),
    ({"kind": "conditional", "params": {"loss": "mle", "sample_size": "ten"}},
     "config key methods.M.params.sample_size: must be an integer >= 1, got 'ten'"),
    ({"kind": "structrank", "grid": {"l1_bound": [10, "x"]}}, "config key methods.M.grid.l1_bound: must be a number > 0 or null, got 'x'"),
    ({"kind": "linear", "params": {"loss": "svm_map", "solver": "lbfgs"}},
     "config key methods.M.params.solver: solver 'lbfgs' cannot fit loss 'svm_map'.*valid solvers: cutting_plane"),
    ({"kind": "structsvm", "params": {"loss": "svm_map", "solver": "projected_sgd"}},
     "config key methods.M.params.solver: solver 'projected_sgd' is not available to structsvm; valid: cutting_plane, lbfgs"),
    ({"kind": "linear", "params": {"loss": "ranknet", "seed": 3}}, "methods.M.params.seed: set once for the whole run"),
    ({"kind": "rankboost", "params": {"rel_threshold": 2}}, "as config key evaluation.rel_threshold"),
])
def test_a_method_value_that_would_fail_at_fit_is_refused_naming_its_key(spec, message):
    with pytest.raises(ConfigError, match=message):
        check_method("M", spec)


def test_numbers_inside_a_command_line_section_become_numbers():
    """`--config 'report={n_resamples: 1000}'` hands Snakemake's config the string '1000'."""
    schema = yaml.safe_load((Path(__file__).resolve().parents[1] / "workflow/schemas/config.schema.yaml").read_text())
    config = {"folds": ["1"], "report": {"n_resamples": "1000", "alpha": "0.1", "baseline": "ranknet",
                                         "min_queries": "12", "compare": "all_pairs"},
              "features": {"first_order": "false", "rho": ["0.2"], "normalization": "zscore"},
              "evaluation": {"rel_threshold": "2"}}
    config = read_cli_values(config, schema)
    assert config["report"] == {"n_resamples": 1000, "alpha": 0.1, "baseline": "ranknet", "min_queries": 12,
                                "compare": "all_pairs"}
    assert config["features"] == {"first_order": False, "rho": [0.2], "normalization": "zscore"}
    assert config["evaluation"]["rel_threshold"] == 2
    config = {"folds": [1], "report": {"n_resamples": "many"}}
    config = read_cli_values(config, schema)
    assert config["report"]["n_resamples"] == "many"  # left for the validation to name


def test_numbers_inside_a_command_line_method_become_numbers_where_its_ranker_takes_numbers():
    """`--config "methods={cond: {kind: conditional, params: {sample_size: 10}}}"` hands over '10': the
    schema cannot type a method's parameters, the ranker's annotations do."""
    config = {"folds": [1], "methods": {
        "cond": {"kind": "conditional", "params": {"loss": "mle", "sample_size": "10", "restart_skew": "-5"},
                 "grid": {"C": ["1.0e-2", "0.1"]}},
        "bad": {"kind": "conditional", "params": {"loss": "mle", "sample_size": "ten"}},
        "ls": {"kind": "linear", "params": {"loss": "ranknet", "solver": "lbfgs"}}}}
    config = read_cli_values(config)
    assert config["methods"]["cond"]["params"] == {"loss": "mle", "sample_size": 10, "restart_skew": -5}
    assert config["methods"]["cond"]["grid"] == {"C": [0.01, 0.1]}
    check_method("cond", config["methods"]["cond"])
    assert config["methods"]["bad"]["params"]["sample_size"] == "ten"  # left for check_method to name
    assert config["methods"]["ls"]["params"] == {"loss": "ranknet", "solver": "lbfgs"}  # strings stay strings


def validated(config: dict, **evaluation) -> dict:
    """``config`` with ``evaluation`` merged over its section (as --config 'evaluation={...}' does),
    the schema's defaults set and with_derived_defaults done, as the Snakefile does."""
    from snakemake.utils import update_config

    from rankstudy.pipeline.config import with_derived_defaults

    update_config(config, {"evaluation": evaluation})
    config = with_schema_defaults(config, SCHEMA)
    config = with_derived_defaults(config)
    return config


def test_extra_metrics_join_the_computed_metrics_once(config):
    written = list(config["evaluation"]["metrics"])
    assert validated(copy.deepcopy(config))["evaluation"]["extra_metrics"] == []
    config["report"].pop("metrics")
    merged = validated(config, extra_metrics=["err@5", "map"])
    assert merged["evaluation"]["metrics"] == written + ["err@5"]  # map is already there
    assert merged["report"]["metrics"] == written  # the report's default is the list as written
    merged["report"]["metrics"].append("err@5")  # an extra metric may be reported: it is computed
    check_config(merged, REPO)


def test_a_bad_extra_metric_fails_naming_its_key_and_value(config):
    with pytest.raises(ConfigError, match=r"config key evaluation\.extra_metrics: unknown metric 'err@x'"):
        validated(config, extra_metrics=["err@5", "err@x"])


def test_evaluate_params_without_extra_metrics_are_the_section_as_before(config):
    from rankstudy.pipeline.config import evaluate_params

    before = copy.deepcopy(config["evaluation"])
    assert repr(evaluate_params(validated(config)["evaluation"])) == repr(before)


SAVED_WITH_ERR5 = {"metrics": ["map", "err@5"], "selection_metric": "ndcg@10", "rel_threshold": 1,
                   "no_relevant": "zero", "extra_metrics": ["err@5"], "max_label": 2}


@pytest.mark.parametrize("evaluation, keeps_saved", [
    (dict(extra_metrics=[]), True),  # an extra metric dropped: nothing to compute
    (dict(metrics=["map", "err@5"], extra_metrics=[]), True),  # made a metric of its own: the same columns
    (dict(extra_metrics=["err@5"]), True),
    (dict(extra_metrics=["mrr"]), False),  # a metric the outputs lack
    (dict(extra_metrics=[], selection_metric="map"), False),  # another setting
    (dict(metrics=["ndcg@3"], extra_metrics=["err@5"]), False),  # map, not an extra metric, dropped
])
def test_saved_outputs_with_dropped_extra_metrics_keep_their_params(evaluation, keeps_saved):
    """Snakemake reruns a job whose params changed: params equal to the saved ones mean no rerun."""
    from rankstudy.pipeline.config import evaluate_params

    section = {"metrics": ["map"], "extra_metrics": [], "selection_metric": "ndcg@10", "rel_threshold": 1,
               "no_relevant": "zero"}
    section.update(evaluation)
    section["metrics"] = list(dict.fromkeys(section["metrics"] + section["extra_metrics"]))  # as with_derived_defaults does
    params = evaluate_params(section, SAVED_WITH_ERR5)
    recorded = {k: v for k, v in SAVED_WITH_ERR5.items() if k != "max_label"}  # the saving job's params
    assert (repr(params) == repr(recorded)) is keeps_saved
    assert params == evaluate_params(section) or keeps_saved
    assert evaluate_params(section, None) == evaluate_params(section)


def test_baseline_and_run_methods_mistakes_are_refused_with_the_fix(config):
    config["run_methods"] = ["lambdamart", "ranksvm"]
    with pytest.raises(ConfigError, match=r"report\.baseline: 'ranknet' is not among the methods run \(lambdamart, "
                                          r"ranksvm\); set report\.baseline to one of them .*or leave it out"):
        check_config(copy.deepcopy(config), REPO)
    del config["report"]["baseline"]
    assert check_config(copy.deepcopy(config), REPO).baseline == "lambdamart [first]"  # the first method run
    config["report"]["baseline"] = "ranksvm [rho0.50]"
    with pytest.raises(ConfigError, match=r"feature set 'rho0\.50' of 'ranksvm \[rho0\.50\]' is not among the feature "
                                          r"sets this run builds \(first, rho0\.10\)"):
        check_config(copy.deepcopy(config), REPO)
    config["report"]["baseline"] = "ranksvm [rho0.10]"
    assert check_config(copy.deepcopy(config), REPO).baseline == "ranksvm [rho0.10]"
    config["run_methods"] = []
    with pytest.raises(ConfigError, match=r"run_methods: empty"):
        check_config(copy.deepcopy(config), REPO)


def test_a_subset_of_a_studys_methods_is_told_which_paper_rows_stay_empty(config):
    study = yaml.safe_load((REPO / "config/studies/chakrabarti2008-fig9.yaml").read_text())
    merged = {**config, **{k: v for k, v in study.items() if k not in ("methods", "evaluation", "report")},
              "methods": {**config["methods"], **study["methods"]},
              "report": {**config["report"], **study.get("report", {})},
              "evaluation": {**config["evaluation"], **study.get("evaluation", {})}}
    merged["run_methods"] = ["DORM", "SVMmrr", "RankSVM"]
    merged["report"]["baseline"] = "RankSVM"
    merged = with_schema_defaults(merged, SCHEMA)
    merged = with_derived_defaults(merged)
    notes = check_config(merged, REPO).notes
    assert len(notes) == 1 and "SVMauc [first]" in notes[0] and "'not run'" in notes[0] and "DORM [first]" not in notes[0]


def test_a_study_trains_the_methods_it_defines_and_not_the_defaults(config):
    """Snakemake's deep merge gave every study the six default methods (and merged a study's
    ranknet into the default one); a study now owns its methods."""
    from snakemake.utils import update_config

    study = {"methods": {"ranknet": {"kind": "linear", "params": {"loss": "listnet"}}, "mine": {"kind": "lambdamart"}}}
    update_config(config, copy.deepcopy(study))
    assert config["methods"]["ranknet"]["grid"] == {"l2": [1.0e-4, 1.0e-2, 1.0]}  # the deep merge's mix
    config = own_methods(config, study)
    assert config["methods"] == study["methods"] and "baseline" not in config["report"]
    assert check_config(config, REPO).baseline == "ranknet [first]"  # the first method run
    default = yaml.safe_load((REPO / "config/config.yaml").read_text())
    default = own_methods(default, {"datasets": ["MQ2008"]})  # nothing defines methods: the default study's
    assert list(default["methods"]) == ["pointwise", "ranknet", "ranksvm", "listnet", "listmle", "lambdamart"]
    kept, given = yaml.safe_load((REPO / "config/config.yaml").read_text()), {"methods": {"m": {"kind": "linear"}},
                                                                            "report": {"baseline": "m"}}
    update_config(kept, copy.deepcopy(given))
    kept = own_methods(kept, given)
    assert kept["report"]["baseline"] == "m" and list(kept["methods"]) == ["m"]


def test_a_key_given_twice_in_a_config_file_is_named_with_its_line(tmp_path):
    """PyYAML keeps the last of two equal keys silently: a method labelled ranknet was trained as
    the ListNet written under the same name further down."""
    study = tmp_path / "study.yaml"
    study.write_text("methods:\n  ranknet: {kind: linear}\n  other: {kind: linear}\n  ranknet: {kind: linear, "
                     "params: {loss: listnet}}\n")
    with pytest.raises(ConfigError, match=rf"^config file {study}:4: key 'ranknet' is given twice \(first on line 2\)$"):
        read_config_files([study])
    study.write_text("folds: [1\nmethods: {}\n")
    with pytest.raises(ConfigError, match=rf"^config file {study}:2: "):
        read_config_files([study])
    study.write_text("folds: [1, 2]\nmethods: {a: {kind: linear}}\n")
    read_config_files([study, REPO / "config/config.yaml", *sorted((REPO / "config/studies").glob("*.yaml"))])


@pytest.mark.parametrize("text, line, problem", [
    ("folds:\n\t- 1\n", 2, r"found character '\\t' \(a tab; indent with spaces\)"),
    ("study: x\n  folds: [1]\n", 2, "mapping values are not allowed here"),
    ("folds: [1, 2\nstudy: x\n", 2, r"expected ',' or '\]'"),
])
def test_bad_yaml_in_a_config_file_is_named_with_its_line(tmp_path, capsys, text, line, problem):
    """Snakemake says only "Config file is not valid JSON or YAML", naming neither."""
    from rankstudy.pipeline.configfiles import main

    study = tmp_path / "study.yaml"
    study.write_text(text)
    with pytest.raises(ConfigError, match=rf"^config file {study}:{line}: {problem}"):
        read_config_files([study])
    assert main([str(study), str(tmp_path / "missing.yaml")]) == 1  # what bootstrap.py run calls first
    err = capsys.readouterr().err
    assert err.startswith(f"rankstudy: config file {study}:{line}: ") and err.count("\n") == 1
    assert main([str(REPO / "config/config.yaml"), str(tmp_path / "missing.yaml")]) == 0  # missing: Snakemake says


def test_a_config_value_that_is_not_valid_yaml_is_named_by_its_key():
    """Snakemake keeps `--config 'folds=[1,2'` as the string '[1,2', then blamed for its type."""
    from rankstudy.pipeline.configfiles import check_cli_values

    with pytest.raises(ConfigError, match=r"^--config folds=\[1,2: not valid YAML at column 5: expected ',' or '\]'"):
        check_cli_values({"study": "s", "folds": "[1,2", "l2": 0.1})
    with pytest.raises(ConfigError, match=r"^--config methods=\{a: \{kind: linear\}: not valid YAML"):
        check_cli_values({"methods": "{a: {kind: linear}"})
    with pytest.raises(ConfigError, match=r"^--config methods=\{a: 1, a: 2\}: .*key 'a' is given twice"):
        check_cli_values({"methods": "{a: 1, a: 2}"})
    check_cli_values({"study": "my study", "folds": ["1", "2"], "methods": {"a": {"kind": "linear"}}})


def test_a_departure_from_the_schema_is_one_line_naming_the_key(config):
    schema = yaml.safe_load((REPO / "workflow/schemas/config.schema.yaml").read_text())
    assert schema_problem(copy.deepcopy(config), schema) is None
    config["studdy"] = "x"
    assert schema_problem(config, schema) == ("config key (top level): Additional properties are not allowed "
                                              "('studdy' was unexpected)")
    del config["studdy"]
    config["report"]["alpha"] = "high"
    assert schema_problem(config, schema).startswith("config key report.alpha: 'high' is not of type")


# ---- one config load: values compared as values, the command line as YAML, shared settings said once


def resolved(study: dict | None = None, cli: list[str] = (), base: dict | None = None) -> tuple[dict, object]:
    """``(config, settings)`` as the Snakefile's load_config leaves them: config/config.yaml (or
    ``base``) with a study file's values and ``--config`` entries (read by Snakemake's own parser)
    merged over it, as Snakemake merges them, then resolve_config."""
    from snakemake.cli import parse_config
    from snakemake.utils import update_config

    from rankstudy.pipeline.config import resolve_config

    config = copy.deepcopy(base) if base is not None else yaml.safe_load((REPO / "config/config.yaml").read_text())
    defaults = copy.deepcopy(config["methods"])
    given, cli_values = copy.deepcopy(study or {}), parse_config(list(cli))
    update_config(config, copy.deepcopy(given))
    update_config(config, copy.deepcopy(cli_values))
    settings = resolve_config(config, REPO, given, cli_values, defaults)
    return settings.config, settings


def test_cleaning_params_are_one_spelling_per_setting():
    """config.yaml has no binarize, the leaderboard binarize: []: the same cleaned folder, but the
    clean job's params differed, so Snakemake cleaned again and retrained everything downstream."""
    from rankstudy.pipeline.layout import cleaning_name, cleaning_rules

    default = {"drop_no_relevant": ["train"], "chakrabarti": []}
    spellings = [default, {"drop_no_relevant": ["train"], "binarize": [], "chakrabarti": []},
                 {"binarize": [], "drop_no_relevant": ["train", "train"]},
                 {"drop_no_relevant": ["train"], "near_duplicates": {"side": "bad"}},  # no chakrabarti: unused
                 {"chakrabarti": [], "drop_no_relevant": ["train"], "binarize": []}]
    assert {repr(cleaning_rules(c)) for c in spellings} == {repr(default)}  # config.yaml's runs keep their params
    assert len({cleaning_name(c, 1) for c in spellings}) == 1
    chakrabarti = {"drop_no_relevant": ["train"], "chakrabarti": ["test", "train"]}
    at_defaults = {**chakrabarti, "near_duplicates": {"side": "both", "scope": "query", "cosine": 0.99,
                                                       "zero_vectors": True}}
    assert cleaning_rules(at_defaults) == cleaning_rules(chakrabarti) == {"drop_no_relevant": ["train"],
                                                                           "chakrabarti": ["train", "test"]}
    assert cleaning_name(at_defaults, 1) == cleaning_name(chakrabarti, 1.0)
    given = {**chakrabarti, "near_duplicates": {"side": "bad", "cosine": 0.99}}
    assert cleaning_rules(given)["near_duplicates"] == {"side": "bad"}
    assert cleaning_name(given, 1) != cleaning_name(chakrabarti, 1)
    assert cleaning_rules({"binarize": ["test", "train"]})["binarize"] == ["train", "test"]


def test_job_params_are_the_same_for_a_setting_spelled_differently(config):
    """rel_threshold 1.0 is config.yaml's 1; the evaluation keys and a method's params in another
    order, params: {} or a method written with its keys reordered, are the same params."""
    from rankstudy.pipeline.config import evaluate_params
    from rankstudy.selection.spec import canonical_spec

    plain, _ = resolved()
    respelled, _ = resolved({"evaluation": {"no_relevant": "zero", "rel_threshold": 1.0, "selection_metric": "ndcg@10"},
                             "methods": {name: {"grid": spec["grid"], "kind": spec["kind"],
                                                "params": dict(reversed(spec["params"].items()))}
                                         for name, spec in config["methods"].items()}})
    assert respelled["evaluation"]["rel_threshold"] == 1 and isinstance(respelled["evaluation"]["rel_threshold"], int)
    assert repr(evaluate_params(respelled["evaluation"])) == repr(evaluate_params(plain["evaluation"]))
    assert repr(respelled["methods"]) == repr(plain["methods"])
    assert repr(plain["methods"]) == repr(config["methods"])  # config.yaml's spelling is the canonical one
    assert canonical_spec({"kind": "linear", "params": {}, "grid": {}}) == {"kind": "linear"}
    assert canonical_spec({"kind": "neural", "params": {"loss_params": {"b": 1, "a": 2}, "loss": "x"}}) == \
        {"kind": "neural", "params": {"loss": "x", "loss_params": {"a": 2, "b": 1}}}
    grid = {"num_leaves": [15, 31], "learning_rate": [0.1, 0.05]}  # the candidates' order: kept
    assert list(canonical_spec({"kind": "lambdamart", "grid": grid})["grid"]) == ["num_leaves", "learning_rate"]


def test_generated_data_settings_are_one_spelling():
    from rankstudy.data.sources import source_settings

    entry = {"source": "synthetic"}
    a = source_settings(entry, {"seed": 0, "synthetic": {"n_queries": 250, "n_features": 24}})
    b = source_settings(entry, {"seed": 0, "synthetic": {"n_features": 24, "n_queries": 250}})
    assert repr(a) == repr(b) == repr({"source": "synthetic", "seed": 0, "n_queries": 250, "n_features": 24})


def test_command_line_lists_and_mappings_inside_a_method_are_yaml_values():
    """Snakemake reads --config with YAML's BaseLoader: hidden: [64, 32] arrived as ['64', '32']
    and was refused, while the same in a YAML file worked."""
    config, _ = resolved(cli=["methods={m: {kind: neural, params: {hidden: [64, 32], input_norm: null, "
                              "loss: lambdaloss, loss_params: {weighting: lambdarank, k: 5}, epochs: 2}}}"])
    assert config["methods"]["m"]["params"] == {"hidden": [64, 32], "input_norm": None, "loss": "lambdaloss",
                                                "loss_params": {"k": 5, "weighting": "lambdarank"}, "epochs": 2}
    config, _ = resolved(cli=["method_defaults={neural: {params: {hidden: [8]}}}",
                              "methods={m: {kind: neural, params: {loss: softmax}}}"])
    assert config["methods"]["m"]["params"]["hidden"] == [8]


def test_a_command_line_method_without_kind_changes_the_studys_method_and_with_kind_replaces_it(config):
    """Snakemake's merge: `methods={ranknet: {params: {max_iter: 50}}}` keeps ranknet's kind, loss
    and grid (it was taken for a new method without a kind)."""
    changed, settings = resolved(cli=["methods={ranknet: {params: {max_iter: 50}}}"])
    assert list(changed["methods"]) == list(config["methods"])  # every method of the study stays
    assert changed["methods"]["ranknet"] == {**config["methods"]["ranknet"],
                                             "params": {"loss": "ranknet", "max_iter": 50}}
    assert settings.baseline == "ranknet [first]"
    replaced, _ = resolved(cli=["methods={ranknet: {kind: linear, params: {loss: listnet}}}"])
    assert replaced["methods"]["ranknet"] == {"kind": "linear", "params": {"loss": "listnet"}}  # whole: no grid
    assert list(replaced["methods"]) == list(config["methods"])
    study = {"methods": {"a": {"kind": "linear", "params": {"loss": "ranknet"}}, "b": {"kind": "lambdamart"}}}
    on_study, _ = resolved(study, cli=["methods={b: {params: {n_estimators: 5}}}"])
    assert on_study["methods"] == {"a": study["methods"]["a"], "b": {"kind": "lambdamart", "params": {"n_estimators": 5}}}
    new, settings = resolved(cli=["methods={mine: {kind: lambdamart}}"])  # only new methods: the run's own
    assert list(new["methods"]) == ["mine"] and settings.baseline == "mine [first]"
    with pytest.raises(ConfigError, match=r"^config key methods\.nosuch: no kind, and the study has no method "
                                          r"'nosuch' to change \(its methods: pointwise, ranknet, .*\); give kind"):
        resolved(cli=["methods={nosuch: {params: {max_iter: 50}}}"])


def test_run_methods_without_the_studys_baseline_compare_against_the_first_method_run():
    """Every helper that picked methods hit "report.baseline: 'ranknet' is not among the methods run"."""
    config, settings = resolved(cli=["run_methods=[lambdamart, listnet]"])
    assert settings.baseline == "lambdamart [first]" and "baseline" not in config["report"]
    assert settings.notes == ("report.baseline 'ranknet' is not among the methods run; the tables compare against "
                              "'lambdamart', the first method run (set report.baseline to choose another)",)
    _, settings = resolved(cli=["run_methods=[lambdamart, ranknet]"])
    assert settings.baseline == "ranknet [first]" and settings.notes == ()
    with pytest.raises(ConfigError, match=r"report\.baseline: 'ranknet' is not among the methods run"):
        resolved(cli=["run_methods=[lambdamart]", "report={baseline: ranknet}"])  # named: the error stays


def test_method_defaults_say_a_familys_settings_once():
    study = {"method_defaults": {"linear": {"params": {"max_iter": 20, "loss": "ranknet"}, "grid": {"l2": [1.0]},
                                            "threads": 2}},
             "methods": {"a": {"kind": "linear"},
                         "b": {"kind": "linear", "params": {"loss": "listnet", "l2": 0.5}, "threads": 1},
                         "c": {"kind": "lambdamart"}}}
    config, _ = resolved(study)
    assert config["methods"] == {
        "a": {"kind": "linear", "params": {"loss": "ranknet", "max_iter": 20}, "grid": {"l2": [1.0]}, "threads": 2},
        # its own loss, and its own l2 (a param) wins over the defaults' grid of l2
        "b": {"kind": "linear", "params": {"loss": "listnet", "l2": 0.5, "max_iter": 20}, "threads": 1},
        "c": {"kind": "lambdamart"}}
    for block, message in [({"neurall": {"params": {}}}, r"^config key method_defaults\.neurall: unknown kind 'neurall'"),
                           ({"linear": {"params": {"epochs": 3}}}, r"^config key method_defaults\.linear\.params\.epochs: "
                                                                   r"unknown parameter 'epochs' of 'linear'"),
                           ({"linear": {"params": {"max_iter": 0}}}, r"^config key method_defaults\.linear\.params\.max_iter: "
                                                                     r"must be"),
                           ({"linear": {"kind": "linear"}}, r"^config key method_defaults\.linear: Additional properties"),
                           ({"linear": {"params": {"seed": 3}}}, r"method_defaults\.linear\.params\.seed: set once")]:
        with pytest.raises(ConfigError, match=message):
            resolved({**study, "method_defaults": block})


@pytest.mark.parametrize("name", ["neural-letor", "leaderboard"])
def test_study_files_rewritten_with_method_defaults_resolve_to_the_same_methods(name):
    """neural-letor.yaml repeated nine parameters in 24 entries; written once (method_defaults and
    YAML anchors), its methods resolve as the old file's did (captured from the old file), in
    the same order and spelling: the train jobs' params are unchanged, nothing retrains."""
    import json

    before = json.loads((Path(__file__).parent / "study_methods_before_defaults.json").read_text())[name]
    config, _ = resolved(yaml.safe_load((REPO / f"config/studies/{name}.yaml").read_text()))
    # methods added to the file since are not this test's business
    assert repr({m: spec for m, spec in config["methods"].items() if m in before}) == repr(before)


def test_yaml_anchors_and_merge_keys_are_read_in_a_config_file(tmp_path):
    """The strict loader (a key given twice) refused `<<: *anchor` as an unknown tag."""
    study = tmp_path / "study.yaml"
    study.write_text("methods:\n  a: {kind: neural, params: {<<: &n {scorer: mlp, epochs: 3}, loss: softmax}}\n"
                     "  b: {kind: neural, params: {<<: *n, epochs: 4}}\n")
    read_config_files([study])
    config, _ = resolved(yaml.safe_load(study.read_text()))
    assert config["methods"]["b"]["params"] == {"scorer": "mlp", "epochs": 4}


def test_a_negative_run_seed_is_refused_by_the_schema(config):
    with pytest.raises(ConfigError, match=r"^config key seed: -1 is less than the minimum of 0"):
        with_schema_defaults({**config, "seed": -1}, SCHEMA)


def test_a_data_set_too_wide_for_its_pair_correlations_is_refused_before_any_job(config):
    """200,000 features: 2e10 pairs, far beyond any machine's memory; refused naming features.rho and
    the way out, not a MemoryError in the pair_correlations job. First-order only runs."""
    config["synthetic"]["n_features"] = 200_000
    with pytest.raises(ConfigError, match=r"config key features\.rho: data set 'synthetic' has 200000 features, "
                                          r"whose 20,000,100,000 pair correlations need about .* GiB, more than this "
                                          r"machine's .* GiB; set features\.rho: \[\]"):
        check_config(config, REPO)
    config["features"].update(rho=[], quadratic_rho=[])
    check_config(config, REPO)


def test_a_pruner_set_on_the_command_line_keeps_its_numbers():
    """`--config 'tune={pruner: {kind: hyperband, reduction_factor: 4}}'`: Snakemake hands the 4
    over as the string '4', which the schema cannot type (a pruner's settings are a free mapping);
    it was refused as "must be an integer >= 2 ..., got '4'"."""
    study = yaml.safe_load((REPO / "config/studies/tuned.yaml").read_text())
    config, _ = resolved(study, ["tune={pruner: {kind: hyperband, reduction_factor: 4}}"])
    tuned = [spec["tune"] for spec in config["methods"].values() if "tune" in spec]
    assert tuned and all(t["pruner"]["kind"] == "hyperband" and t["pruner"]["reduction_factor"] == 4 for t in tuned)
    assert config["tune"]["trials"] == study["tune"]["trials"]  # the study's other settings stay
