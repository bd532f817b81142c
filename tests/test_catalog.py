"""`python -m rankstudy list`: generated from the registries, so every name a config can use is
listed, with a method kind's parameters, defaults and what each may be."""

from __future__ import annotations

import inspect

from rankstudy.__main__ import main
from rankstudy.evaluation.metrics import METRICS
from rankstudy.losses.registry import LOSSES
from rankstudy.pipeline import catalog
from rankstudy.util.params import describe
from rankstudy.rankers.registry import RANKERS
from rankstudy.solvers.registry import SOLVERS


def names(lines: list[str]) -> list[str]:
    return [line.split(":")[0] for line in lines if not line.startswith(" ")]


def test_every_registered_name_is_listed_once():
    assert names(catalog.methods()) == sorted(RANKERS)
    assert names(catalog.losses()) == sorted(LOSSES)
    assert names(catalog.solvers()) == list(SOLVERS)
    assert [n.split(",")[0].split("@")[0] for n in names(catalog.metrics())] == list(METRICS)
    assert "letor3-ohsumed" in names(catalog.studies()) and "MQ2008" in names(catalog.datasets())


def test_a_method_lists_each_parameter_with_its_default_and_constraint():
    lines = catalog.methods()
    start = lines.index(next(l for l in lines if l.startswith("lambdamart:")))
    params = inspect.signature(RANKERS["lambdamart"].__init__).parameters
    block = lines[start + 1:start + len(params)]
    for line, (name, p) in zip(block, list(params.items())[1:]):
        assert line.strip() == f"{name} = {p.default!r}  ({describe(RANKERS['lambdamart'].parameter_constraints[name])})"


def test_the_command_prints_a_section(capsys):
    assert main(["list", "losses"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert any(line.startswith("listnet: ListNet top-one cross entropy") for line in out)
    assert main(["list"]) == 0
    assert "methods:" in capsys.readouterr().out
