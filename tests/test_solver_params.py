"""A solver's own settings (rankstudy.solvers.settings) set from a method's ``solver_params``:
a linear ranker trained by Adam takes its learning rate, every value is checked by the solver's
declaration, and a wrong key is named with its path before any job."""

from __future__ import annotations

import numpy as np
import pytest

from losscheck import linear_signal_data
from rankstudy.pipeline.config import check_method
from rankstudy.pipeline.errors import ConfigError
from rankstudy.rankers.linear import LinearRanker
from rankstudy.rankers.registry import RANKERS
from rankstudy.rankers.separate import SeparateRanker
from rankstudy.rankers.structrank import StructRank
from rankstudy.solvers import settings
from rankstudy.solvers.adam import Adam
from rankstudy.solvers.registry import SOLVERS
from rankstudy.util.params import ParamError


def test_a_linear_ranker_trained_by_adam_takes_its_learning_rate_and_epochs():
    train, vali = linear_signal_data(0, n_queries=30), linear_signal_data(1, n_queries=10)
    default = LinearRanker(loss="listnet", solver="adam")
    chosen = LinearRanker(loss="listnet", solver="adam", solver_params={"learning_rate": 0.05, "epochs": 4})
    solver = chosen.make_solver()
    assert isinstance(solver, Adam) and (solver.learning_rate, solver.epochs, solver.batch_size) == (0.05, 4, 64)
    # the ranker's own seed still reaches the solver (and the loss); nothing else changes
    assert LinearRanker(solver="adam", seed=7, solver_params={"epochs": 2}).make_solver().seed == 7
    assert (default.make_solver().learning_rate, default.make_solver().epochs) == (1e-3, 50)
    chosen.fit(train, vali)
    assert len(chosen.history_) <= 5  # the start and at most 4 epochs
    slow = LinearRanker(loss="listnet", solver="adam", solver_params={"learning_rate": 1e-5, "epochs": 4}).fit(train, vali)
    assert not np.allclose(chosen.coef_, slow.coef_)
    assert np.abs(chosen.coef_).sum() > 10 * np.abs(slow.coef_).sum()  # a larger rate moves further


@pytest.mark.parametrize("params, key, problem", [
    ({"solver": "adam", "solver_params": {"learning_rate": -1.0}}, "solver_params.learning_rate", "must be a number > 0"),
    ({"solver": "adam", "solver_params": {"lr": 0.1}}, "solver_params.lr", "unknown adam setting 'lr'"),
    ({"solver": "adam", "solver_params": {"seed": 3}}, "solver_params.seed", "the ranker's own parameter"),
    ({"solver_params": {"max_iter": 3}}, "solver_params.max_iter", "the ranker's own parameter"),
    # no solver given: ranknet's is L-BFGS, which has no learning rate
    ({"solver_params": {"learning_rate": 0.1}}, "solver_params.learning_rate", "unknown lbfgs setting"),
    ({"loss": "svm_map", "solver": "cutting_plane", "solver_params": {"prune_after": 0}},
     "solver_params.prune_after", "must be an integer >= 1 or null"),
])
def test_a_bad_solver_setting_is_named_by_its_key(params, key, problem):
    with pytest.raises(ParamError, match=problem) as caught:
        LinearRanker(**params)
    assert caught.value.param == key
    with pytest.raises(ConfigError, match=rf"methods\.M\.params\.{key}: .*{problem}"):
        check_method("M", {"kind": "linear", "params": params})


def test_a_separate_ranker_takes_solver_params_for_its_nonlinear_default_solver():
    assert SeparateRanker(solver="adam", solver_params={"batch_size": 5}).make_solver().batch_size == 5
    with pytest.raises(ParamError, match="unknown lbfgs setting 'batch_size'"):
        SeparateRanker(solver_params={"batch_size": 5})


def test_each_solver_default_is_declared_once_and_the_rankers_reuse_the_declaration():
    # a ranker parameter named as a solver setting it passes on is that setting's Param itself,
    # so the default cannot drift between the two (StructRank's projected SGD, the neural ranker's
    # Adam, the L-BFGS iterations of linear and separate, the structural SVM's cutting plane)
    for kind, solver, names in [("linear", "lbfgs", ("max_iter", "tol")), ("separate", "lbfgs", ("max_iter", "tol")),
                                ("structsvm", "cutting_plane", ("max_iter", "epsilon")),
                                ("structrank", "projected_sgd", ("step", "decay", "epochs", "l1_bound",
                                                                 "feasibility", "step_rule")),
                                ("neural", "adam", ("learning_rate", "epochs", "batch_size", "patience"))]:
        for name in names:
            assert RANKERS[kind].parameters[name] is SOLVERS[solver].parameters[name], (kind, name)
    assert StructRank().make_solver().epochs == settings.PROJECTED_SGD["epochs"].default
    # every solver builds from its declarations alone, and refuses a value the declaration refuses
    for name, entry in SOLVERS.items():
        if name == "cutting_plane":
            continue  # builds too, but needs the QP library; tested in test_cutting_plane
        solver = entry.cls()
        assert all(getattr(solver, key) == p.default for key, p in entry.parameters.items())
    with pytest.raises(ParamError, match="epochs must be an integer >= 1"):
        SOLVERS["projected_sgd"].cls(epochs=0)


def test_a_grid_may_name_a_solver_setting_and_each_candidate_fits_with_it():
    """grid: {solver_params.learning_rate: [...]}: each value checked by the solver's declaration
    before any job (named by its key), each candidate fitted with it (the method's other solver
    settings kept), the chosen one's full parameters holding it."""
    from rankstudy.selection.search import select_and_fit
    from rankstudy.selection.spec import SpecError, check_spec

    spec = {"kind": "linear", "params": {"loss": "listnet", "solver": "adam", "solver_params": {"epochs": 3}},
            "grid": {"solver_params.learning_rate": [1e-5, 0.05]}}
    check_spec(spec)
    for grid, message in (({"solver_params.learning_rate": [0.0]},
                           "grid.solver_params.learning_rate: must be a number > 0"),
                          ({"solver_params.rate": [0.1]}, "grid.solver_params.rate: unknown setting 'rate'")):
        with pytest.raises(SpecError, match=message):
            check_spec({**spec, "grid": grid})
    with pytest.raises(SpecError, match="of solver_params \\(the lbfgs solver's own settings"):
        check_spec({"kind": "linear", "params": {"loss": "listnet"}, "grid": {"solver_params.learning_rate": [0.1]}})
    train, vali = linear_signal_data(0, n_queries=30), linear_signal_data(1, n_queries=10)
    ranker, chosen, rows = select_and_fit("linear", spec["params"], spec["grid"], train, vali, progress=lambda _: None)
    assert [row["param.solver_params.learning_rate"] for row in rows] == [1e-5, 0.05]
    assert rows[0]["vali.ndcg@10"] != rows[1]["vali.ndcg@10"]
    assert chosen["solver_params"]["epochs"] == 3
    assert chosen["solver_params"]["learning_rate"] == [r["param.solver_params.learning_rate"] for r in rows
                                                        if r["selected"]][0]
    assert ranker.make_solver().learning_rate == chosen["solver_params"]["learning_rate"]
