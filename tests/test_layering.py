"""The package's layering: the import-linter contracts of pyproject.toml hold, and they do
catch a module that imports from a layer above its own."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
LINT_IMPORTS = str(Path(sys.executable).with_name("lint-imports"))


def lint_imports(src: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(src)}
    return subprocess.run([LINT_IMPORTS, "--config", str(REPO / "pyproject.toml"), "--no-cache"],
                          cwd=src, env=env, capture_output=True, text=True, timeout=300)


def test_import_contracts_hold():
    out = lint_imports(REPO / "src")
    assert out.returncode == 0, out.stdout + out.stderr
    assert "0 broken" in out.stdout


def test_an_upward_import_breaks_the_layers_contract(tmp_path):
    shutil.copytree(REPO / "src" / "rankstudy", tmp_path / "rankstudy")
    blocks = tmp_path / "rankstudy" / "data" / "blocks.py"
    blocks.write_text(blocks.read_text() + "\nfrom rankstudy.rankers import registry  # noqa: E402\n")
    out = lint_imports(tmp_path)
    assert out.returncode != 0
    assert "rankstudy.data.blocks -> rankstudy.rankers.registry" in out.stdout
