"""Packaging: environment.yml and pyproject.toml agree, and the licence is stated as setuptools
wants it."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
PROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]


def names(specs) -> set[str]:
    return {re.split(r"[<>=!~ \[]", s.strip(), maxsplit=1)[0].lower() for s in specs}


def test_environment_yml_lists_the_pyproject_dependencies():
    wanted = PROJECT["dependencies"] + PROJECT["optional-dependencies"]["test"]
    env = yaml.safe_load((REPO / "environment.yml").read_text())["dependencies"]
    listed = [d for d in env if isinstance(d, str)] + [p for d in env if isinstance(d, dict) for p in d["pip"]]
    missing = names(wanted) - names(listed)
    assert not missing, f"environment.yml lacks {sorted(missing)}"


def test_license_is_an_spdx_expression():
    # a table ({text = ...}) makes setuptools warn on every install
    assert isinstance(PROJECT["license"], str)
