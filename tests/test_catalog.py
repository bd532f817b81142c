"""`python -m rankstudy list`: generated from the registries, so every name a config can use is
listed, with a method kind's parameters, defaults, what each may be and its tuning space; the
summaries are whole first sentences as plain text; `--example KIND` prints a method block that
passes the config check."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml
from snakemake.utils import update_config, validate

from rankstudy.__main__ import main
from rankstudy.evaluation.metrics import METRICS
from rankstudy.losses.registry import LOSSES
from rankstudy.pipeline import catalog
from rankstudy.pipeline.config import with_derived_defaults, check_config, read_config_files, own_methods, schema_problem
from rankstudy.rankers.base import Ranker
from rankstudy.rankers.registry import RANKERS
from rankstudy.solvers.registry import SOLVERS
from rankstudy.util.params import Integer, Real, describe

REPO = Path(__file__).resolve().parents[1]
SCHEMA = REPO / "workflow/schemas/config.schema.yaml"


def names(lines: list[str]) -> list[str]:
    return [line.split(":")[0] for line in lines if not line.startswith(" ")]


def block(lines: list[str], name: str) -> list[str]:
    """The lines of one entry: its own and the indented ones under it."""
    start = next(i for i, line in enumerate(lines) if line.startswith(f"{name}:"))
    end = next((i for i in range(start + 1, len(lines)) if not lines[i].startswith(" ")), len(lines))
    return lines[start:end]


def test_every_registered_name_is_listed_once():
    assert names(catalog.methods()) == sorted(RANKERS)
    assert names(catalog.losses()) == sorted(LOSSES)
    assert names(catalog.solvers()) == list(SOLVERS)
    assert [n.split(",")[0].split("@")[0] for n in names(catalog.metrics())] == list(METRICS)
    assert "letor3-ohsumed" in names(catalog.studies()) and "MQ2008" in names(catalog.datasets())


def test_a_method_lists_each_parameter_with_its_default_constraint_and_tuning_space():
    text = " ".join(" ".join(line.split()) for line in block(catalog.methods(), "lambdamart"))
    for name, param in RANKERS["lambdamart"].parameters.items():
        shown = f"{name} = {param.default!r} (" + (f"{param.help}: " if param.help else "") \
            + describe(param.constraints)
        if param.space is not None:  # the space tuning draws it from, where one is declared
            shown += f"; tuned: {param.space.describe()}"
        if param.library:  # LightGBM's own default, beside rankstudy's
            shown += f"; LightGBM's own default: {param.library}"
        assert shown + ")" in text


@pytest.mark.parametrize("kind, shown", [
    ("lambdamart", "learning_rate = 0.05 (a number > 0; tuned: log-uniform in [0.01, 0.3]; LightGBM's own "
                   "default: 0.1)"),
    ("lambdamart", "n_estimators = 300 (boosting rounds at most: an integer >= 1; LightGBM's own default: 100)"),
    ("lambdamart", "early_stopping_rounds = 30 (an integer >= 1; LightGBM's own default: none)"),
    ("xgboost", "learning_rate = 0.05 (a number > 0; tuned: log-uniform in [0.01, 0.3]; XGBoost's own default: 0.3)"),
    ("catboost", "l2_leaf_reg = 3.0 (a number >= 0; tuned: log-uniform in [0.1, 30]; CatBoost's own default: 3, "
                 "but 0 (stored as 1e-20) for YetiRank, YetiRankPairwise and LambdaMart)"),
    ("random_forest", "feature_fraction = 0.3 (a number > 0 and <= 1; tuned: uniform in [0.1, 1]; LightGBM's own "
                      "default: 1)"),
])
def test_a_wrapped_librarys_own_default_is_shown_beside_rankstudys(kind, shown):
    """The board's defaults are rankstudy's; the list says where the library's own differ."""
    text = " ".join(" ".join(line.split()) for line in block(catalog.methods(), kind))
    assert shown in text
    assert "own default" not in " ".join(block(catalog.methods(), "linear"))  # wraps no library


def test_the_form_before_param_is_refused_with_what_to_write():
    with pytest.raises(TypeError, match=r"Old: declare its parameters as `parameters = \{name: Param"):
        class Old(Ranker):  # its own __init__ and parameter_constraints: a second declaration
            kind = "old"
            parameter_constraints = {"rounds": [Integer(1)], "rate": [Real(0, low_open=True)]}

            def __init__(self, rounds: int = 10, rate: float = 0.1) -> None:
                super().__init__()
                self.rounds, self.rate = rounds, rate


@pytest.mark.parametrize("text, sentence", [
    # cut at the first full stop, the list said "conditional: ``loss``: ``mle`` (Eq" and
    # "structsvm: ... s.t"
    ("ConvexLoss (Eq. 14): a bound of L1 + L2. More.", "ConvexLoss (Eq. 14): a bound of L1 + L2"),
    ("min 1/2 ||w||^2 s.t. w'x >= 1 - xi, i.e. a hinge. Next", "min 1/2 ||w||^2 s.t. w'x >= 1 - xi, i.e. a hinge"),
    ("As Chakrabarti et al. did, e.g. on OHSUMED. Then", "As Chakrabarti et al. did, e.g. on OHSUMED"),
    ("the floor (the regulariser, Eq. 10). alpha starts at step", "the floor (the regulariser, Eq. 10)"),
    ("no full stop at all", "no full stop at all"),
])
def test_the_first_sentence_is_whole(text, sentence):
    assert catalog.first_sentence(text) == sentence


@pytest.mark.parametrize("text, shown", [
    (":func:`~rankstudy.evaluation.metrics.parse_metric` takes", "parse_metric takes"),
    ("the solver (:mod:`rankstudy.solvers.cutting_plane`)", "the solver (rankstudy.solvers.cutting_plane)"),
    (":class:`the scorer <rankstudy.scorers.mlp.MLPScorer>` and ``hidden``", "the scorer and hidden"),
    ("ApproxNDCG (module docstring): per query", "ApproxNDCG: per query"),
    ("*emphasis*, **strong**, phi(x, y*) and `role`", "emphasis, strong, phi(x, y*) and role"),
])
def test_markup_is_shown_as_the_reader_sees_it(text, shown):
    assert catalog.plain(text) == shown


def test_the_list_has_whole_summaries_without_markup(capsys):
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    for markup in ("``", ":func:", ":class:", ":mod:", "(module docstring)"):
        assert markup not in out
    lines = out.splitlines()
    conditional = " ".join(line.strip() for line in block([l[2:] for l in lines], "conditional"))
    assert conditional.startswith("conditional: Conditional models over rankings (Dubey et al. 2009)")
    assert not conditional.endswith("(Eq") and conditional.endswith("the best kept on validation")
    structsvm = " ".join(line.strip() for line in block([l[2:] for l in lines], "structsvm"))
    assert not structsvm.endswith("s.t") and structsvm.endswith("(rankstudy.solvers.cutting_plane)")
    assert "adam: Minibatch Adam over batches of queries" in out  # not "See the module docstring"
    assert max(map(len, lines)) <= 110


def test_the_scorers_section_lists_the_neural_rankers_scorers_with_their_parameters(capsys):
    assert main(["list", "scorers"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert names(lines) == ["mlp", "attention"]
    mlp = " ".join(block(lines, "mlp"))
    attention = " ".join(block(lines, "attention"))
    for name in ("hidden", "activation", "dropout", "input_norm"):
        assert f" {name} = " in mlp
    for name in ("d_model", "n_blocks", "n_heads", "d_ff", "activation", "dropout"):
        assert f" {name} = " in attention
    assert "input_norm" not in attention and "d_model" not in mlp
    # each scorer's own activations, not the union the ranker takes
    assert "(one of relu, gelu, tanh)" in attention and "gelu" not in mlp


def test_the_command_prints_a_section(capsys):
    assert main(["list", "losses"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert any(line.startswith("listnet: ListNet top-one cross entropy") for line in out)
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    assert "methods:" in out and "scorers:" in out


def checked(methods_yaml: str, tmp_path: Path) -> None:
    """``methods_yaml`` as a study file through the Snakefile's config check (YAML, the study
    owning its methods, the schema and its defaults, then check_config), on a data set and
    feature sets the method's kind takes."""
    study = tmp_path / "study.yaml"
    study.write_text(methods_yaml)
    read_config_files([study])
    given = yaml.safe_load(methods_yaml)
    cls = RANKERS[next(iter(given["methods"].values()))["kind"]]
    given["datasets"] = ["synthetic_qa" if cls.data_kind == "qa" else "synthetic"]
    given["features"] = {"first_order": True, "rho": [0.1] if "rho" in cls.featureset_types else []}
    config = yaml.safe_load((REPO / "config/config.yaml").read_text())
    update_config(config, copy.deepcopy(given))
    config = own_methods(config, given)
    assert schema_problem(config, yaml.safe_load(SCHEMA.read_text())) is None
    validate(config, str(SCHEMA))
    config = with_derived_defaults(config)
    check_config(config, REPO)


@pytest.mark.parametrize("kind", sorted(RANKERS))
def test_the_example_of_every_kind_passes_the_config_check(kind, capsys, tmp_path):
    assert main(["list", "--example", kind]) == 0
    out = capsys.readouterr().out
    methods = yaml.safe_load(out)["methods"]
    assert list(methods) == [kind] and methods[kind]["kind"] == kind
    # every parameter the method sets itself, at its default (the run sets seed and rel_threshold)
    assert set(methods[kind].get("params") or {}) == set(RANKERS[kind].param_names()) - {"seed", "rel_threshold"}
    checked(out, tmp_path)


def test_an_unknown_kind_has_no_example(capsys):
    assert main(["list", "--example", "lambdamrt"]) == 2
    assert "unknown method kind 'lambdamrt'; kinds: " in capsys.readouterr().err


def test_the_methods_page_lists_every_default_that_is_not_the_librarys_own():
    """docs/methods.md's "Whose defaults" table has a row for each GBDT parameter whose rankstudy
    default differs from its library's own (as the rankers declare them), and no other."""
    from rankstudy.reporting.defaults import differences

    page = (REPO / "docs/methods.md").read_text()
    table = page[page.index("### Whose defaults"):]
    rows = {tuple(cell.strip() for cell in line.strip("|").split("|")) for line in table.splitlines()
            if line.startswith("| `")}
    kinds = [k for k in RANKERS if getattr(RANKERS[k], "library", "")]
    found = differences({k: {"kind": k} for k in kinds})
    expected = {(f"`{kind}`", f"`{name}`", float(default), own)
                for kind, (_, shown) in found.items() for name, default, own in shown}
    assert {(kind, name, float(ours), own) for kind, name, ours, own in rows} == expected
