"""The README's "Extending rankstudy" examples, run as the README writes them: each code block is
read from README.md, put where its first line says, and must pass the config check and learn
(its objective falls, and it beats a random ranking by a clear margin). So the docs cannot drift
from the code again."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
import yaml

from losscheck import finite_difference, make_batch, relative_error
from rankstudy.evaluation import metrics
from rankstudy.losses import baseline
from rankstudy.losses.registry import LOSSES, Loss
from rankstudy.pipeline.config import check_method
from rankstudy.pipeline.errors import ConfigError
from rankstudy.rankers.spec import training_params
from rankstudy.rankers import registry as rankers
from rankstudy.rankers.selection import select_and_fit
from rankercheck import make_data, mean_ndcg_at_10

README = Path(__file__).resolve().parents[1] / "README.md"


def blocks() -> list[tuple[str, str]]:
    """(language, code) of every fenced block of the README's extension section, in order."""
    text = README.read_text()
    section = text[text.index("## Extending rankstudy"):]
    section = section[:section.index("\n## ", 1)]
    return re.findall(r"```(\w+)\n(.*?)```", section, re.S)


def entry(code: str, namespace: dict) -> tuple[str, object]:
    """A registry entry line (``"name": expression,``) evaluated in ``namespace``."""
    line = next(line for line in code.splitlines() if not line.lstrip().startswith("#"))
    name, expression = re.fullmatch(r'\s*"(\w+)":\s*(.+?),\s*', line).groups()
    return name, eval(expression, namespace)  # noqa: S307 - the README's own example


@pytest.fixture(scope="module")
def examples():
    found = blocks()
    assert [lang for lang, _ in found] == ["python", "python", "yaml", "python", "python", "python", "python"]
    return [code for _, code in found]


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


def test_the_new_loss_checks_its_gradient_and_learns(examples, splits, monkeypatch):
    code, registration, config = examples[:3]
    namespace = dict(vars(baseline))  # "numpy as np, clean and query_weights are imported there"
    exec(code, namespace)  # noqa: S102
    new = set(namespace) - set(vars(baseline))
    for function in new:  # the function now stands in its module, as the README says
        monkeypatch.setattr(baseline, function, namespace[function], raising=False)
    name, loss = entry(registration, {"Loss": Loss})
    monkeypatch.setitem(LOSSES, name, loss)
    s, y, mask = make_batch()
    value, grad = loss(s, y, mask)
    assert relative_error(grad, finite_difference(lambda v: loss(v, y, mask)[0], s)) < 1e-6
    [(method, spec)] = yaml.safe_load(config)["methods"].items()
    check_method(method, spec)  # the config check passes it
    learns(spec["kind"], spec, splits)


def test_the_new_metric_is_a_valid_name_and_counts_hits(examples, splits, monkeypatch):
    code, registration = examples[3:5]
    namespace = dict(vars(metrics))
    exec(code, namespace)  # noqa: S102
    name, metric = entry(registration, namespace)
    monkeypatch.setitem(metrics.METRICS, name, metric)
    test = splits[2]
    scores = np.random.default_rng(1).normal(size=len(test.y))
    got = metrics.per_query(scores, test.y, test.offsets, [f"{name}@3"])[f"{name}@3"]
    for q in range(test.n_queries):  # independent: is a label >= 1 among the 3 best scores?
        a, b = test.offsets[q], test.offsets[q + 1]
        top = np.argsort(-scores[a:b], kind="stable")[:3]
        assert got[q] == float((test.y[a:b][top] >= 1).any()) or (not (test.y[a:b] >= 1).any() and got[q] == 0)


def test_the_new_ranker_kind_needs_no_seed_and_learns(examples, splits, monkeypatch):
    code, registration = examples[5:7]
    namespace: dict = {}
    exec(code, namespace)  # noqa: S102 - its own imports, as in its file
    name, path = entry(registration, namespace)
    cls = namespace[path.rpartition(":")[2]]  # the class the "module:Class" entry names, as written above
    monkeypatch.setitem(rankers.RANKERS, name, cls)
    with pytest.raises(ConfigError, match=rf"methods\.mine\.grid\.l2: must be a number >= 0, got -1"):
        check_method("mine", {"kind": name, "grid": {"l2": [1e-3, -1]}})  # its declared constraints are checked
    spec = {"params": {"max_iter": 100}, "grid": {"l2": [1e-3, 1e-1]}}
    check_method("mine", {"kind": name, **spec})
    assert "seed" not in training_params({"kind": name, **spec}, seed=7, rel_threshold=1)
    learns(name, spec, splits)
