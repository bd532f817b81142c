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
    assert set(TOOLS) == {"learn-check", "letor-conventions", "same-fit"}


def test_same_fit_says_identical_for_the_same_code_and_names_what_moved(shared_data, tmp_path, capsys):
    """`same-fit`: a method fitted twice on a real fold is identical; a model that moved is said so."""
    import json

    common = ["same-fit", "--data", str(shared_data / "MQ2008"), "--method", "rankboost", "--set", "n_rounds=20",
              "--cache", str(tmp_path / "cache")]
    for name in ("a", "b"):
        assert main([*common, "--out", str(tmp_path / name)]) == 0
    capsys.readouterr()
    assert main(["same-fit", "--compare", str(tmp_path / "a"), str(tmp_path / "b")]) == 0
    assert "state identical, history identical, vali_scores identical, test_scores identical" in capsys.readouterr().out
    doc = json.loads((tmp_path / "b.json").read_text())
    doc["state"]["alphas"][0] *= 1 + 1e-6
    (tmp_path / "b.json").write_text(json.dumps(doc))
    assert main(["same-fit", "--compare", str(tmp_path / "a"), str(tmp_path / "b")]) == 1
    assert "state differ" in capsys.readouterr().out
