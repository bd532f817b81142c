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


def specs(specs) -> dict[str, tuple[str, set[str]]]:
    """name -> (version constraint without spaces, extras) of each requirement string."""
    found = {}
    for spec in specs:
        name, extras, version = re.fullmatch(r"\s*([\w.-]+)\s*(?:\[([^]]*)\])?\s*(.*?)\s*", spec).groups()
        found[name.lower()] = (version.replace(" ", ""), {e.strip().lower() for e in (extras or "").split(",") if e.strip()})
    return found


def test_environment_yml_asks_for_the_same_versions_and_extras():
    """Names alone let numpy>=1.0 against pyproject's numpy>=2.1, a dropped clarabel (the
    qpsolvers[clarabel] extra) and python>=3.8 pass."""
    env = yaml.safe_load((REPO / "environment.yml").read_text())["dependencies"]
    listed = specs([d for d in env if isinstance(d, str)] + [p for d in env if isinstance(d, dict)
                                                             for p in d["pip"] if not p.startswith("-")])
    for name, (version, extras) in specs(PROJECT["dependencies"] + PROJECT["optional-dependencies"]["test"]).items():
        assert listed[name][0] == version, f"environment.yml has {name}{listed[name][0]}, pyproject.toml {name}{version}"
        assert extras <= set(listed), f"environment.yml lacks {sorted(extras - set(listed))}, the extras of {name}"
    assert listed["python"][0] == PROJECT["requires-python"].replace(" ", "")


def test_license_is_an_spdx_expression():
    # a table ({text = ...}) makes setuptools warn on every install
    assert isinstance(PROJECT["license"], str)
