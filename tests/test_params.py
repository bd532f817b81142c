"""One home for a method spec: every ranker declares what each parameter may be, the declaration
is checked when a ranker is built and by the config check, and a scored ranker written from
scratch inherits the solver x loss check."""

from __future__ import annotations

import pytest

from rankstudy.losses.registry import bind_loss
from rankstudy.pipeline.config import check_method, read_cli_values
from rankstudy.pipeline.errors import ConfigError
from rankstudy.util.params import (Choice, Choices, Integer, IntRange, LogUniform, Param, ParamError, Real, Uniform,
                                    check_value, describe, read_value, space_from_config, space_problem)
from rankstudy.rankers.registry import RANKERS
from rankstudy.rankers.scored import ScoredRanker
from rankstudy.scorers.linear import LinearScorer
from rankstudy.solvers.registry import make_solver


@pytest.mark.parametrize("kind", sorted(RANKERS))
def test_every_parameter_of_every_ranker_is_declared_and_its_default_is_valid(kind):
    cls = RANKERS[kind]
    assert set(cls.parameter_constraints) == set(cls.param_names()), kind
    cls()  # the defaults pass their own constraints


def test_constraints_describe_themselves_and_name_the_parameter():
    assert describe([Integer(1)]) == "an integer >= 1"
    assert describe([None, Real(0, low_open=True)]) == "a number > 0 or null"
    with pytest.raises(ParamError, match=r"^m: max_iter must be an integer >= 1, got -5$"):
        check_value("max_iter", -5, [Integer(1)], owner="m")
    with pytest.raises(ParamError, match=r"unknown loss 'x'; valid: a, b"):
        check_value("loss", "x", [None, Choice(["a", "b"], "loss")])
    for bad in (True, 2.0, float("nan")):
        with pytest.raises(ParamError):
            check_value("n", bad, [Integer()])
    check_value("n", None, [None, Integer()])


def test_strings_are_read_as_the_type_the_parameter_wants():
    assert read_value("10", [Integer(1)]) == 10
    assert read_value("1e-2", [Real(0)]) == 0.01  # YAML 1.1 reads 1e-2 as a string
    assert read_value("null", [None, Real(0)]) is None
    assert read_value("abc", [Real(0)]) == "abc"  # left for the check to name
    assert read_value("ranknet", [Choice(["ranknet"])]) == "ranknet"


@pytest.mark.parametrize("spec, key", [
    ({"kind": "linear", "grid": {"l2": [1e-3, -1.0]}}, r"methods\.M\.grid\.l2: must be a number >= 0, got -1"),
    ({"kind": "linear", "params": {"tol": -1}}, r"methods\.M\.params\.tol: must be a number >= 0"),
    ({"kind": "linear", "params": {"max_iter": -5}}, r"methods\.M\.params\.max_iter: must be an integer >= 1"),
    ({"kind": "lambdamart", "params": {"learning_rate": -0.1}}, r"methods\.M\.params\.learning_rate: must be a number > 0"),
    ({"kind": "lambdamart", "grid": {"num_leaves": [0]}}, r"methods\.M\.grid\.num_leaves: must be an integer >= 2"),
    ({"kind": "linear", "grid": {"l2": []}}, r"methods\.M\.grid\.l2: must be a non-empty list"),
    ({"kind": "structsvm", "params": {"C": 0}}, r"methods\.M\.params\.C: must be a number > 0"),
])
def test_a_value_out_of_range_is_refused_before_any_job_naming_its_key(spec, key):
    with pytest.raises(ConfigError, match=key):
        check_method("M", spec)


def test_yaml_1_1_numbers_in_a_grid_are_numbers_and_the_bad_value_is_the_one_blamed():
    config = {"folds": [1], "methods": {"M": {"kind": "linear", "grid": {"l2": ["1e-2", "1.0e-3"]}}}}
    config = read_cli_values(config)
    assert config["methods"]["M"]["grid"]["l2"] == [0.01, 0.001]
    check_method("M", config["methods"]["M"])
    config = {"folds": [1], "methods": {"M": {"kind": "linear", "grid": {"l2": ["1e-2", "x"]}}}}
    config = read_cli_values(config)
    with pytest.raises(ConfigError, match=r"grid\.l2: must be a number >= 0, got 'x'"):
        check_method("M", config["methods"]["M"])


class HingeByLBFGS(ScoredRanker):
    """Written from the docs' recipe (docs/extending.md), with a solver that cannot fit its loss."""

    kind = "hinge_by_lbfgs"
    parameters = {"l2": Param(Real(0), 1e-3)}

    def make_scorer(self):
        return LinearScorer()

    def make_loss(self):
        return bind_loss("svm_map")

    def make_solver(self):
        return make_solver("lbfgs")


def test_a_new_scored_ranker_inherits_the_solver_and_loss_check(monkeypatch):
    with pytest.raises(ParamError, match=r"solver 'lbfgs' cannot fit loss 'svm_map'.*valid solvers: cutting_plane"):
        HingeByLBFGS()
    monkeypatch.setitem(RANKERS, HingeByLBFGS.kind, HingeByLBFGS)
    with pytest.raises(ConfigError, match=r"methods\.M\.params\.solver: solver 'lbfgs' cannot fit loss 'svm_map'"):
        check_method("M", {"kind": HingeByLBFGS.kind})


def test_the_train_job_imports_only_what_training_a_linear_ranker_uses(repo_root):
    """The train job's own imports, then a linear ranker built from its spec, in a fresh
    interpreter: no MLflow, LightGBM, QP solver, JAX, Optuna (an untuned method) or the pipeline's config
    module."""
    import subprocess
    import sys

    script = repo_root / "workflow" / "scripts" / "train.py"
    imports = [line for line in script.read_text().splitlines() if line.startswith(("import ", "from "))]
    code = "\n".join(imports + [
        "from rankstudy.rankers.registry import make_ranker",
        "from rankstudy.selection.spec import training_params",
        "make_ranker('linear', training_params({'kind': 'linear', 'params': {'loss': 'ranknet'}}, 0, 1))",
        "import sys; print(' '.join(sorted(sys.modules)))"])
    loaded = set(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split())
    heavy = {"mlflow", "lightgbm", "qpsolvers", "jax", "rankstudy.pipeline.config", "sklearn", "pandas", "optuna"}
    assert not heavy & loaded, heavy & loaded


def test_the_evaluate_job_imports_no_pandas_mlflow_or_optimizer(repo_root, tmp_path):
    """The evaluate job's own imports, then a saved linear ranker loaded as the job loads it, in a
    fresh interpreter: its cost is the metric arithmetic, not pandas' (0.7 s), SciPy's optimisers
    (0.3 s) or MLflow's import."""
    import subprocess
    import sys

    from rankstudy.rankers.registry import make_ranker

    import numpy as np

    from rankstudy.data.rankdata import RankData

    rng = np.random.default_rng(0)
    data = RankData(X=rng.normal(size=(20, 3)), y=rng.integers(0, 3, 20).astype(float), qid=np.repeat([1, 2], 10),
                    docid=np.arange(20).astype(str), offsets=np.array([0, 10, 20]))
    model = tmp_path / "model.json"
    make_ranker("linear", {"loss": "ranknet"}).fit(data).save(model)
    script = repo_root / "workflow" / "scripts" / "evaluate.py"
    imports = [line for line in script.read_text().splitlines() if line.startswith(("import ", "from "))]
    code = "\n".join(imports + [f"load_ranker({str(model)!r})", "import sys; print(' '.join(sorted(sys.modules)))"])
    loaded = set(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split())
    heavy = {"pandas", "mlflow", "lightgbm", "jax", "scipy", "rankstudy.pipeline.config", "sklearn"}
    assert not heavy & loaded, heavy & loaded


def test_parsing_the_snakefile_imports_no_pandas_scipy_or_mlflow(tmp_path):
    """Every snakemake call parses the Snakefile, and on SLURM every job does: the package's
    modules it imports stay on the light side (pandas and scipy.stats were 1.5 s of each parse).
    Read from `python -X importtime`: what was imported under a rankstudy module (Snakemake's
    own plugins may load pandas; that is not ours)."""
    import subprocess
    import sys

    from pipeline_runs import SNAKEMAKE, TINY, make_workdir

    workdir = make_workdir(tmp_path, TINY)
    out = subprocess.run([sys.executable, "-X", "importtime", SNAKEMAKE, "-n", "--configfile", "test.yaml",
                          "--replace-workflow-config"], cwd=workdir, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    # importtime writes a module after the modules it imported, indented one more level each
    tree = [(len(name) - len(name.lstrip()), name.strip()) for name in
            (line.split("|")[-1] for line in out.stderr.splitlines() if line.startswith("import time:"))]
    ours, under_ours = set(), set()
    for i, (level, name) in enumerate(tree):
        if name.startswith("rankstudy"):
            ours.add(name)
            j = i - 1
            while j >= 0 and tree[j][0] > level:
                under_ours.add(tree[j][1])
                j -= 1
    assert "rankstudy.pipeline.config" in ours  # the config check's module was read
    heavy = {"pandas", "scipy.stats", "scipy.sparse", "scipy.optimize", "mlflow", "matplotlib", "lightgbm", "jax"}
    assert not heavy & under_ours, heavy & under_ours


def test_a_declared_class_gets_its_init_from_the_declarations_with_fresh_defaults():
    from rankstudy.rankers.base import Ranker
    from rankstudy.util.params import Choices, Listing, LogUniform, Param

    class Tiny(Ranker):
        kind = "tiny"
        parameters = {"rate": Param(Real(0, low_open=True), 0.1, space=LogUniform(1e-3, 1.0)),
                      "sizes": Param(Listing(Integer(1)), [4, 2], space=Choices([[4], [8, 4]])),
                      "width": Param(Integer(1), 3, space=IntRange(1, 9), tune_when={"sizes": [8, 4]})}

    a, b = Tiny(), Tiny(0.5)
    assert (a.rate, b.rate, a.sizes, Tiny.param_names()) == (0.1, 0.5, [4, 2], ["rate", "sizes", "width"])
    a.sizes.append(1)
    assert Tiny().sizes == [4, 2]  # a list default is never shared
    assert Tiny.parameter_constraints["rate"][0].accepts(2.0)
    with pytest.raises(ParamError, match="tiny: rate must be a number > 0, got 0"):
        Tiny(rate=0)
    assert set(Tiny.search_space()) == {"rate", "sizes"}
    assert set(Tiny.search_space({"sizes": [8, 4]})) == {"rate", "sizes", "width"}


@pytest.mark.parametrize("param, problem", [
    (lambda P: P(Real(0, 1), 0.1, space=LogUniform(1e-3, 2.0)), r"rate: search space log-uniform in \[0.001, 2\] leaves"),
    (lambda P: P(Integer(1), 3, space=Uniform(1, 5)), r"rate: is an integer parameter: use \{int"),
    (lambda P: P(Integer(1), 0), r"rate: the declared default"),
    (lambda P: P(Choice(["a", "b"]), "a", space=Choices(["a", "c"])), r"'c' is not one of a, b"),
])
def test_a_declaration_whose_default_or_space_leaves_its_constraints_is_refused_when_the_class_is_made(param, problem):
    from rankstudy.rankers.base import Ranker
    from rankstudy.util.params import Param

    with pytest.raises(TypeError, match=problem):
        type("Bad", (Ranker,), {"kind": "bad", "parameters": {"rate": param(Param)}})


def test_search_spaces_read_and_write_themselves_as_config_data():
    for data in ({"log_uniform": [1e-6, 1.0]}, {"uniform": [0, 0.5]}, {"int": [1, 8]}, {"int_log": [2, 256]},
                 {"choices": [[64, 32], [128]]}):
        assert space_from_config(data).to_config() == data
    for bad, problem in [({"log_uniform": [0, 1]}, "lower end > 0"), ({"uniform": [2, 1]}, "the lower first"),
                         ({"normal": [0, 1]}, r"must be one of \{uniform"), ({"int": [1.5, 3]}, "two integers"),
                         ({"choices": []}, "non-empty list")]:
        with pytest.raises(ValueError, match=problem):
            space_from_config(bad)
    assert space_problem(LogUniform(1e-4, 1.0), [Real(0, low_open=True)]) is None
    assert "leaves" in space_problem(Uniform(-1, 1), [Real(0)])


def test_a_space_suggests_through_an_optuna_trial():
    optuna = pytest.importorskip("optuna")
    trial = optuna.trial.FixedTrial({"a": 0.01, "b": 3, "c": 1})
    assert LogUniform(1e-3, 1).suggest(trial, "a") == 0.01
    assert IntRange(1, 5).suggest(trial, "b") == 3
    assert Choices([[64], [128, 64]]).suggest(trial, "c") == [128, 64]  # lists go by their index


def test_checking_a_neural_ndcg_method_imports_no_jax():
    """The config check runs in the Snakemake process: it checks NeuralNDCG's options against their
    declarations instead of calling the loss (which imports JAX), and still names a bad one."""
    import subprocess
    import sys

    spec = {"kind": "neural", "params": {"scorer": "attention", "loss": "neural_ndcg",
                                         "loss_params": {"temperature": 0.5, "k": 10, "sinkhorn_iterations": 20}}}
    code = (f"import sys; from rankstudy.pipeline.config import check_method; check_method('M', {spec!r}); "
            "print('jax' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"
    spec["params"]["loss_params"] = {"temperature": 0}
    with pytest.raises(ConfigError, match=r"methods\.M\.params\.loss_params\.temperature: must be a number > 0"):
        check_method("M", spec)


def test_every_seed_is_the_one_declaration_and_refuses_what_numpy_refuses():
    """A seed is declared once (util.params.SEED): numpy's generators take integers >= 0 only, and
    a negative seed used to fail mid-fit (StructRank's random CDN, Coordinate Ascent, the conditional
    models, the linear and neural rankers) instead of in the config check."""
    from rankstudy.losses.options import SEED as LOSS_SEED
    from rankstudy.solvers.registry import SOLVERS
    from rankstudy.util.params import SEED

    seeded = {kind: cls.parameters["seed"] for kind, cls in RANKERS.items() if "seed" in cls.parameters}
    assert len(seeded) >= 10 and all(param is SEED for param in seeded.values()), seeded
    assert all(entry.parameters["seed"] is SEED for entry in SOLVERS.values() if "seed" in entry.parameters)
    assert LOSS_SEED is SEED.constraints
    with pytest.raises(ParamError, match="seed must be an integer >= 0, got -1"):
        make_solver("adam", {"seed": -1})
    for kind in ("structrank", "conditional", "coordinate_ascent", "linear"):
        with pytest.raises(ConfigError, match=rf"^config key methods\.M\.params\.seed: must be an integer >= 0, got -1$"):
            check_method("M", {"kind": kind}, seed=-1)
