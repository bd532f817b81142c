"""The run configuration: schema validation and the name checks done at workflow start."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml
from snakemake.exceptions import WorkflowError
from snakemake.utils import validate

from rankstudy.features.featuresets import FeatureSet, featuresets_from_config
from rankstudy.pipeline.config import ConfigError, check_config, prepare_cli_values
from rankstudy.reporting import paper_tables

REPO = Path(__file__).resolve().parents[1]
SCHEMA = str(REPO / "workflow/schemas/config.schema.yaml")


@pytest.fixture
def config():
    return yaml.safe_load((REPO / "config/config.yaml").read_text())


def test_default_config_is_valid(config):
    validate(copy.deepcopy(config), SCHEMA)
    settings = check_config(config, REPO)
    assert list(settings.featuresets) == ["first", "rho0.10"]
    assert settings.baseline == "ranknet [first]"


def test_schema_rejects_unknown_key_and_bad_value(config):
    with pytest.raises(WorkflowError, match="nosuchkey"):
        validate({**config, "nosuchkey": 1}, SCHEMA)
    bad = copy.deepcopy(config)
    bad["features"]["normalization"] = "minmax"
    with pytest.raises(WorkflowError, match="minmax"):
        validate(bad, SCHEMA)


@pytest.mark.parametrize("edit, message", [
    (lambda c: c["methods"]["ranknet"].update(kind="svm"), r"methods\.ranknet\.kind.*valid kinds: conditional, lambdamart, linear"),
    (lambda c: c["methods"]["ranknet"]["params"].update(loss="hinge"), r"unknown loss 'hinge'.*listmle"),
    (lambda c: c["methods"]["ranknet"]["grid"].update(C=[1]), r"methods\.ranknet\.grid\.C: not a parameter"),
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
    """A study file is passed with --configfile, so Snakemake merges it over config/config.yaml."""
    from snakemake.utils import update_config

    config = yaml.safe_load((REPO / "config/config.yaml").read_text())
    update_config(config, yaml.safe_load(study.read_text()))
    check_paper_section(config)


def check_paper_section(config: dict) -> None:
    validate(copy.deepcopy(config), SCHEMA)
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
    # every published cell of the paper's table is mapped to one of our systems, and back
    assert set(zip(cells["row"], cells["column"])) == set(zip(published["row"], published["column"]))
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
    with pytest.raises(WorkflowError, match="bogus"):
        validate({**config, "paper": {**config["paper"], "layout": "bogus"}}, SCHEMA)


@pytest.mark.parametrize("given, folds", [(7, [7]), ("3", [3]), (["3", "4"], [3, 4]), ([1, 2], [1, 2])])
def test_cli_folds_are_brought_to_a_list_of_ints(config, given, folds):
    """`--config folds=7` arrives as 7, `folds=[3,4]` as ['3', '4']."""
    config["folds"] = given
    prepare_cli_values(config)
    assert config["folds"] == folds


@pytest.mark.parametrize("given", [{"a": 1}, ["x"], [1.5], None])
def test_cli_folds_that_are_not_fold_numbers_fail_naming_the_key(config, given):
    config["folds"] = given
    with pytest.raises(ConfigError, match=r"config key folds: .*--config 'folds=\[1,2,3\]'"):
        prepare_cli_values(config)


def test_cli_bare_names_become_lists(config):
    config.update(datasets="MQ2008", run_methods="ranknet")
    prepare_cli_values(config)
    assert config["datasets"] == ["MQ2008"] and config["run_methods"] == ["ranknet"]
