"""`python -m rankstudy <command>`: the user tools that lived in benchmarks/ are commands of the
package (benchmarks/ holds timings only), each importing its module only when it runs."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from rankstudy.__main__ import TOOLS, main

REPO = Path(__file__).resolve().parents[1]


def test_the_tools_are_commands_and_not_scripts_in_benchmarks(capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    shown = capsys.readouterr().out
    for command in ("list", "learn-check", "letor-conventions"):
        assert command in shown
    left = sorted(p.name for p in (REPO / "benchmarks").glob("*.py") if not p.name.startswith("bench_"))
    assert left == ["timing.py"], left  # bench_*.py and their timing helper


def test_a_command_imports_its_module_only_when_it_runs(capsys):
    sys.modules.pop("rankstudy.cli.letor_conventions", None)
    assert main(["list", "solvers"]) == 0
    assert "rankstudy.cli.letor_conventions" not in sys.modules
    assert main(["letor-conventions", "--data-root", "/nonexistent"]) == 0
    out = capsys.readouterr().out
    assert "OHSUMED: /nonexistent/OHSUMED/QueryLevelNorm/Fold1 not found, skipped" in out
    assert set(TOOLS) == {"learn-check", "letor-conventions"}
