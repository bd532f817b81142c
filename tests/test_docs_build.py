"""The documentation site builds strictly: `mkdocs build --strict` (mkdocs.yml, the `docs` extra that
the bootstrap installs) fails on any warning: a broken link or anchor, a page missing from the
navigation or not there, a reference page the hook (docs/hooks.py) cannot generate from the
registries."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def test_mkdocs_builds_the_site_strictly(tmp_path):
    pytest.importorskip("mkdocs", reason="the docs extra (pip install -e '.[docs]') is not installed")
    pytest.importorskip("material", reason="the docs extra (pip install -e '.[docs]') is not installed")
    site = tmp_path / "site"
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    out = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(site)],
                         cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    log = out.stdout + out.stderr
    assert out.returncode == 0, log
    assert "WARNING" not in log, log
    for page in ("index.html", "tutorial/index.html", "reference/methods/index.html", "reference/losses/index.html",
                 "reference/cli/index.html", "config-keys/index.html", "results/2026-11-neural-rankers/index.html"):
        assert (site / page).exists(), page
    losses = (site / "reference" / "losses" / "index.html").read_text()
    assert "pointwise_mse" in losses and "listnet" in losses  # generated from the registry
