"""The documentation's examples, run as the pages write them: the tutorial's loss (docs/tutorial.md)
and the extension examples (docs/extending.md) are read from the pages (the blocks marked
``<!-- test: ... -->``, tests/docblocks.py), put where their title says, and must pass the config
check and learn (the objective falls, and the model beats a random ranking by a clear margin). So
the docs cannot drift from the code. The tutorial's whole run, through the Snakemake CLI to the
leaderboard, is tests/test_docs_tutorial_e2e.py."""

from __future__ import annotations

import numpy as np
import pytest
import yaml

from docblocks import one, registry_line
from losscheck import finite_difference, make_batch, relative_error
from rankstudy.evaluation import metrics
from rankstudy.losses import baseline
from rankstudy.losses import registry
from rankstudy.losses.registry import LOSSES
from rankstudy.pipeline.config import check_method
from rankstudy.pipeline.errors import ConfigError
from rankstudy.selection.spec import training_params
from rankstudy.rankers import registry as rankers
from rankstudy.selection.search import select_and_fit
from rankstudy.solvers import settings
from rankercheck import make_data, mean_ndcg_at_10


@pytest.fixture(scope="module")
def splits():
    return make_data(150, 1), make_data(40, 2), make_data(80, 3)


def random_ndcg(test) -> float:
    rng = np.random.default_rng(0)
    return float(np.mean([mean_ndcg_at_10(rng.random(len(test.y)), test) for _ in range(20)]))


def learns(kind: str, spec: dict, splits) -> None:
    train, vali, test = splits
    params = training_params({"kind": kind, **spec}, seed=0, rel_threshold=1)
    ranker, _, _ = select_and_fit(kind, params, spec.get("grid"), train, vali, progress=lambda _: None)
    trace = ranker.objective_trace_
    assert trace["final"] < 0.9 * trace["start"], trace
    assert mean_ndcg_at_10(ranker.predict(test), test) > random_ndcg(test) + 0.15


def test_the_blocks_say_where_they_go():
    """Each block's title (what the reader sees) names the file its marker puts it in."""
    for page, what in [("tutorial.md", "append src/rankstudy/losses/baseline.py"),
                       ("tutorial.md", "entry LOSSES src/rankstudy/losses/registry.py"),
                       ("tutorial.md", "write config/studies/huber.yaml")]:
        block = one(page, what)
        assert block.title.split(",")[0] == block.args[-1], (page, block.title)


def test_the_tutorial_loss_checks_its_gradient_and_learns(splits, monkeypatch):
    code = one("tutorial.md", "append src/rankstudy/losses/baseline.py").code
    registration = one("tutorial.md", "entry LOSSES src/rankstudy/losses/registry.py").code
    study = yaml.safe_load(one("tutorial.md", "write config/studies/huber.yaml").code)
    namespace = dict(vars(baseline))  # "numpy as np, clean and query_weights are imported there"
    exec(code, namespace)  # noqa: S102 - the page's own example
    new = set(namespace) - set(vars(baseline))
    for function in new:  # the function now stands in its module, as the page says
        monkeypatch.setattr(baseline, function, namespace[function], raising=False)
    name, expression = registry_line(registration)
    loss = eval(expression, vars(registry))  # noqa: S307 - the page's own example, in its module
    monkeypatch.setitem(LOSSES, name, loss)
    assert list(loss.options) == registry.loss_options(name)  # every option declared, and only those
    s, y, mask = make_batch()
    value, grad = loss(s, y, mask)
    assert relative_error(grad, finite_difference(lambda v: loss(v, y, mask)[0], s)) < 1e-6
    for method, spec in study["methods"].items():
        check_method(method, spec)  # the config check passes every method of the study
    [(method, spec)] = [(m, spec) for m, spec in study["methods"].items() if spec["params"]["loss"] == name]
    bad = {**spec, "params": {**spec["params"], "loss_params": {"delta": 0}}}
    with pytest.raises(ConfigError, match=rf"^config key methods\.{method}\.params\.loss_params\.delta: must be a "
                                          r"number > 0, got 0$"):  # as the page says
        check_method(method, bad)
    learns(spec["kind"], spec, splits)


def test_the_new_metric_is_a_valid_name_and_counts_hits(splits, monkeypatch):
    code, registration = one("extending.md", "metric").code, one("extending.md", "metric entry").code
    namespace = dict(vars(metrics))
    exec(code, namespace)  # noqa: S102 - the page's own example
    name, expression = registry_line(registration)
    metric = eval(expression, namespace)  # noqa: S307
    monkeypatch.setitem(metrics.METRICS, name, metric)
    test = splits[2]
    scores = np.random.default_rng(1).normal(size=len(test.y))
    got = metrics.per_query(scores, test.y, test.offsets, [f"{name}@3"])[f"{name}@3"]
    for q in range(test.n_queries):  # independent: is a label >= 1 among the 3 best scores?
        a, b = test.offsets[q], test.offsets[q + 1]
        top = np.argsort(-scores[a:b], kind="stable")[:3]
        assert got[q] == float((test.y[a:b][top] >= 1).any()) or (not (test.y[a:b] >= 1).any() and got[q] == 0)


def test_the_new_ranker_kind_needs_no_seed_and_learns(splits, monkeypatch):
    code, registration = one("extending.md", "ranker").code, one("extending.md", "ranker entry").code
    namespace: dict = {}
    exec(code, namespace)  # noqa: S102 - its own imports, as in its file
    name, expression = registry_line(registration)
    path = eval(expression)  # noqa: S307
    cls = namespace[path.rpartition(":")[2]]  # the class the "module:Class" entry names, as written above
    monkeypatch.setitem(rankers.RANKERS, name, cls)
    with pytest.raises(ConfigError, match=r"methods\.mine\.grid\.l2: must be a number >= 0, got -1"):
        check_method("mine", {"kind": name, "grid": {"l2": [1e-3, -1]}})  # its declared constraints are checked
    spec = {"params": {"max_iter": 100}, "grid": {"l2": [1e-3, 1e-1]}}
    check_method("mine", {"kind": name, **spec})
    assert "seed" not in training_params({"kind": name, **spec}, seed=7, rel_threshold=1)
    learns(name, spec, splits)


def test_a_new_solver_setting_is_set_checked_and_tuned_from_a_study_file(monkeypatch):
    """docs/extending.md's L-BFGS setting: declared once (one line), it is set from solver_params,
    checked by the config check, and tuned by its dotted name, with nothing else written."""
    name, expression = registry_line(one("extending.md", "solver setting").code)
    monkeypatch.setitem(settings.LBFGS, name, eval(expression, vars(settings)))  # noqa: S307 - the page's line
    study = yaml.safe_load(one("extending.md", "solver study").code)
    [(method, spec)] = study["methods"].items()
    check_method(method, spec)
    assert rankers.make_ranker(spec["kind"], spec["params"]).make_solver().max_ls == 30
    assert rankers.make_ranker("linear", {"loss": "ranknet"}).make_solver().max_ls == 20  # the declared default
    with pytest.raises(ConfigError, match=rf"^config key methods\.{method}\.params\.solver_params\.{name}: "
                                          r"must be an integer >= 1, got 0"):
        check_method(method, {**spec, "params": {**spec["params"], "solver_params": {name: 0}}})
    with pytest.raises(ConfigError, match=rf"methods\.{method}\.tune\.space\.solver_params\.{name}"):
        check_method(method, {**spec, "tune": {"space": {f"solver_params.{name}": {"int": [0, 50]}}}})
