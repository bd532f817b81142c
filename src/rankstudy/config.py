"""Checks of a run configuration that need the package (names of losses, methods, metrics,
data sets), done once when the workflow starts so a typo fails before any job runs.

The JSON schema in workflow/schemas/ checks shapes and types; this module checks names,
and derives what the workflow needs: the feature sets and the baseline system.
"""

from __future__ import annotations

import inspect
import subprocess
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from rankstudy import datasets, metrics
from rankstudy.ranker_registry import RANKERS, make_ranker
from rankstudy.loss_registry import LOSSES


class ConfigError(ValueError):
    """A configuration value is wrong; the message names the key."""


@dataclass(frozen=True)
class Settings:
    featuresets: list[str]
    baseline: str
    registry: dict
    registry_path: Path


def featureset_names(features: dict) -> list[str]:
    """`first` (first-order features only), one `rho{t:.2f}` per threshold of the rho sweep
    (products materialised as extra columns), and one `quad{t:.2f}` per threshold of
    `quadratic_rho` (products left to the quadratic functional, computed in chunks)."""
    names = ["first"] if features.get("first_order", True) else []
    names += [rho_name(t) for t in features.get("rho", [])]
    names += [rho_name(t, "quad") for t in features.get("quadratic_rho", [])]
    return names


def rho_name(threshold: float, prefix: str = "rho") -> str:
    return f"{prefix}{float(threshold):.2f}"


def rho_of(featureset: str) -> float | None:
    """The rho threshold of a second-order feature set, None for `first`."""
    for prefix in ("rho", "quad"):
        if featureset.startswith(prefix):
            return float(featureset[len(prefix):])
    return None


def is_quadratic(featureset: str) -> bool:
    return featureset.startswith("quad")


def run_methods(config: dict) -> list[str]:
    """The methods this run trains: `run_methods` if given, else every entry of `methods`."""
    return list(config.get("run_methods") or config["methods"])


def system_label(method: str, featureset: str) -> str:
    return f"{method} [{featureset}]"


def resolve_path(path: str | Path, basedir: Path) -> Path:
    """Relative paths are taken from the working directory, else from the workflow's folder."""
    path = Path(path)
    if path.is_absolute() or path.exists():
        return path
    return basedir / path


def _valid_params(cls) -> set[str]:
    return set(inspect.signature(cls.__init__).parameters) - {"self"}


def check_method(name: str, spec: dict) -> None:
    kind = spec.get("kind")
    if kind not in RANKERS:
        raise ConfigError(f"config key methods.{name}.kind: unknown kind {kind!r}; "
                          f"valid kinds: {', '.join(sorted(RANKERS))}")
    valid = _valid_params(RANKERS[kind])
    for section in ("params", "grid"):
        for key in spec.get(section) or {}:
            if key not in valid:
                raise ConfigError(f"config key methods.{name}.{section}.{key}: not a parameter of "
                                  f"{kind!r}; valid: {', '.join(sorted(valid))}")
    losses = [(spec.get("params") or {}).get("loss")] + list((spec.get("grid") or {}).get("loss", []))
    for loss in filter(None, losses):
        if loss not in LOSSES:
            raise ConfigError(f"config key methods.{name}: unknown loss {loss!r}; "
                              f"valid losses: {', '.join(sorted(LOSSES))}")
    # build every grid candidate and call its loss once on a tiny list, so that a wrong name
    # inside the parameters (functional, group, a loss's weight or phi) fails now, not mid-run
    from rankstudy.selection import grid_candidates

    for candidate in grid_candidates(spec.get("grid")):
        params = {**(spec.get("params") or {}), **candidate}
        try:
            make_ranker(kind, params)
            if params.get("loss"):
                scores, labels = np.array([[0.3, -0.2, 0.1]]), np.array([[2.0, 0.0, 1.0]])
                LOSSES[params["loss"]](scores, labels, np.ones((1, 3), bool), **(params.get("loss_params") or {}))
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"config key methods.{name}: {exc}") from None


def check_metric(key: str, name: str) -> None:
    try:
        metrics.parse_metric(name)
    except ValueError as exc:
        raise ConfigError(f"config key {key}: {exc}") from None


def check_config(config: dict, workdir: Path) -> Settings:
    registry_path = resolve_path(config.get("registry", "config/datasets.yaml"), workdir)
    registry = datasets.load_registry(registry_path)
    for name in config["datasets"]:
        if name not in registry:
            raise ConfigError(f"config key datasets: unknown data set {name!r}; "
                              f"valid: {', '.join(sorted(registry))} (see {registry_path})")
        n_folds = registry[name].get("folds", 5)
        bad = [f for f in config["folds"] if f > n_folds]
        if bad:
            raise ConfigError(f"config key folds: {bad} out of range for {name!r}, which has {n_folds} fold(s)")
    for name, spec in config["methods"].items():
        check_method(name, spec)
    for name in config.get("run_methods") or []:
        if name not in config["methods"]:
            raise ConfigError(f"config key run_methods: {name!r} is not defined under methods "
                              f"({', '.join(config['methods'])})")
    evaluation = config["evaluation"]
    for m in evaluation["metrics"]:
        check_metric("evaluation.metrics", m)
    check_metric("evaluation.selection_metric", evaluation.get("selection_metric", "ndcg@10"))
    for m in config["report"].get("metrics", []):
        check_metric("report.metrics", m)
    featuresets = featureset_names(config["features"])
    if not featuresets:
        raise ConfigError("config key features: no feature set (first_order is false and rho is empty)")
    if len(set(featuresets)) != len(featuresets):
        raise ConfigError(f"config key features.rho: thresholds give duplicate feature sets {featuresets}")
    methods = run_methods(config)
    quadratic = [f for f in featuresets if is_quadratic(f)]
    for name in methods if quadratic else []:
        if config["methods"][name]["kind"] != "linear":
            raise ConfigError(f"config key features.quadratic_rho: feature sets {quadratic} need the "
                              f"quadratic functional of a linear method, but {name!r} is "
                              f"{config['methods'][name]['kind']!r}; use features.rho for it")
    check_data_kinds(config, registry, methods, featuresets)
    baseline = config["report"].get("baseline", methods[0])
    if "[" not in baseline:
        if baseline not in methods:
            raise ConfigError(f"config key report.baseline: {baseline!r} is not among the methods run "
                              f"({', '.join(methods)})")
        baseline = system_label(baseline, featuresets[0])
    return Settings(featuresets=featuresets, baseline=baseline, registry=registry,
                    registry_path=registry_path)


def check_data_kinds(config: dict, registry: dict, methods: list[str], featuresets: list[str]) -> None:
    """Question-answer data sets need the separate-representation methods and the other way round."""
    qa = [d for d in config["datasets"] if datasets.is_qa(registry[d])]
    letor = [d for d in config["datasets"] if d not in qa]
    separate = [m for m in methods if config["methods"][m]["kind"] == "separate"]
    others = [m for m in methods if m not in separate]
    if qa and others:
        raise ConfigError(f"config key run_methods: {others} cannot rank question-answer data sets {qa}; "
                          "use methods of kind 'separate' for them (or run them in another study)")
    if letor and separate:
        raise ConfigError(f"config key run_methods: {separate} (kind 'separate') need question-answer data, "
                          f"but {letor} are LETOR-style data sets")
    if qa and featuresets != ["first"]:
        raise ConfigError(f"config key features: question-answer data sets {qa} take no second-order "
                          f"feature sets; set rho and quadratic_rho to [] (got {featuresets})")


def git_commit(path: Path) -> str:
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=path, capture_output=True,
                             text=True, timeout=10)
        return out.stdout.strip() or "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"
