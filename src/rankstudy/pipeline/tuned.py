"""The config's ``tune`` block turned into methods: each method chosen for tuning gets its
resolved settings (the study's budget, sampler and workers, overridden by its own ``tune``
mapping), and with ``variants: [default, tuned]`` it runs twice, as itself and as
``NAME-tuned``, so a board shows both side by side. Everything downstream sees ordinary methods:
a spec with a ``tune`` key is tuned by its train job (:mod:`rankstudy.selection.tuning`)
instead of fitting its grid.

A grid key the ranker declares no search space for becomes a choice among the grid's values,
so a method's grid is never silently dropped when it is tuned. The grid stays with the tuned
spec (``tune.grid``): tuning opens with what the untuned method selects, the default twin's
choice on the fold (``tune.base_method``, whose fit the tuned job reads) or the grid's candidates.
"""

from __future__ import annotations

import copy
import sys

from rankstudy.pipeline.errors import ConfigError
from rankstudy.selection.pruning import PrunerError, pruner_settings
from rankstudy.rankers.registry import RANKERS
from rankstudy.selection.tuning_storage import passwords

TUNED_SUFFIX = "-tuned"
# the study-wide settings a method's own tune mapping may override (workers and storage are the run's)
METHOD_KEYS = ("trials", "cpu_seconds", "sampler", "space", "pruner", "train_fraction")


def tuned_spec(spec: dict, tune: dict, own: dict, pruner: dict) -> dict:
    """The spec a tuned method trains with: its kind and params, and ``tune`` resolved
    (``pruner``: the study's, as :func:`pruner_settings` read it)."""
    settings = {k: tune[k] for k in ("sampler", "trials", "cpu_seconds", "workers")}
    if pruner["kind"] != "none":  # an unpruned spec stays as it was
        settings["pruner"] = copy.deepcopy(pruner)
    if tune.get("train_fraction", 1) != 1:
        settings["train_fraction"] = tune["train_fraction"]
    settings.update({k: v for k, v in own.items() if k in METHOD_KEYS and k not in ("space", "pruner")})
    if "pruner" in own:  # checked by the method check, named under the method's key
        settings["pruner"] = own["pruner"]
    declared = RANKERS[spec["kind"]].search_space(spec.get("params")) if spec.get("kind") in RANKERS else {}
    space = {name: {"choices": list(values)} for name, values in (spec.get("grid") or {}).items()
             if name not in declared}
    space.update(own.get("space") or {})
    settings["space"] = space
    # the untuned method's grid: its candidates (or, beside a default twin, the one it selected) open the study
    settings["grid"] = copy.deepcopy(spec.get("grid") or {})
    out = {k: copy.deepcopy(v) for k, v in spec.items() if k not in ("grid", "tune")}
    out["tune"] = settings
    return out


def with_tuned_methods(config: dict) -> dict:
    """``config`` with its ``tune`` block turned into methods (a new mapping), after the schema set
    the block's defaults: with no ``tune`` block no method may ask to be tuned. Otherwise every
    method run (``tune.methods``, default all of them, less those with ``tune: false``) is tuned;
    with ``tune.variants`` holding ``default`` too, the untuned method stays and ``NAME-tuned``
    joins it, right after it in ``run_methods``."""
    tune = config.get("tune")
    methods = dict(config["methods"])
    if not tune:
        for name, spec in methods.items():
            if isinstance(spec, dict) and spec.get("tune") not in (None, False):
                raise ConfigError(f"config key methods.{name}.tune: the study has no tune block; add one "
                                  f"(tune: {{trials: 20}}) to tune this method, or remove the key")
        return {**config, "methods": {name: _untuned(spec) for name, spec in methods.items()}}
    if tune.get("storage") and passwords(tune["storage"]):
        # Snakemake keeps config values in .snakemake/log and .snakemake/metadata, and the URL goes on
        # the jobs' command lines: a password has no place there
        raise ConfigError("config key tune.storage: holds a password, which would be written into .snakemake/ and "
                          "onto the jobs' command lines; give the URL without it and keep the password in "
                          "~/.pgpass, or export the whole URL as RANKSTUDY_TUNE_STORAGE instead (docs/tuning.md)")
    try:
        pruner = pruner_settings(tune.get("pruner"))
    except PrunerError as exc:
        raise ConfigError(f"config key tune.{exc.key}: {exc.problem}") from None
    run = list(config.get("run_methods") or methods)
    chosen = tune.get("methods") or run
    for name in chosen:
        if name not in methods:
            raise ConfigError(f"config key tune.methods: {name!r} is not defined under methods ({', '.join(methods)})")
    both = "default" in tune["variants"]
    order = []
    for name in run:
        spec = config["methods"][name]
        own = spec.get("tune")
        if own is False or name not in chosen:
            methods[name] = _untuned(spec)
            order.append(name)
            continue
        tuned = tuned_spec(spec, tune, own if isinstance(own, dict) else {}, pruner)
        if not own and not tune.get("methods") and not draws_anything(spec):
            # a study-wide tune block tunes what can be tuned: a method with nothing to draw runs once
            print(f"rankstudy: tune: {name!r} ({spec.get('kind')}) declares no search space and has no grid; "
                  f"it runs untuned (give it tune: {{space: ...}} to tune it)", file=sys.stderr)
            methods[name] = _untuned(spec)
            order.append(name)
            continue
        if not both:
            methods[name] = tuned
            order.append(name)
            continue
        twin = f"{name}{TUNED_SUFFIX}"
        if twin in methods:
            raise ConfigError(f"config key methods.{twin}: the tuned variant of {name!r} takes this name "
                              f"(tune.variants has default and tuned); rename the method")
        methods[name] = _untuned(spec)
        tuned["tune"]["base_method"] = name  # its first trial is what NAME selected on the fold
        methods[twin] = tuned
        order += [name, twin]
    out = {**config, "methods": methods}
    if config.get("run_methods") or both:
        out["run_methods"] = order
    return out


def _untuned(spec):
    """``spec`` without its ``tune`` key (a method not tuned, or the default twin of a tuned one)."""
    return {k: v for k, v in spec.items() if k != "tune"} if isinstance(spec, dict) else spec


def draws_anything(spec: dict) -> bool:
    """Whether tuning ``spec`` (an untuned method) has anything to draw: its ranker declares a
    search space for its params, or its grid gives choices; a study-wide tune block runs it once
    otherwise (benchmarks/bench_board_cost.py counts it so)."""
    if spec.get("kind") not in RANKERS:
        return True  # the method check names the unknown kind
    return bool(RANKERS[spec["kind"]].search_space(spec.get("params")) or spec.get("grid"))


def tuned_from(name: str, methods: dict) -> str | None:
    """The untuned method a ``NAME-tuned`` twin was made from, when both are in ``methods``."""
    if name.endswith(TUNED_SUFFIX) and name[: -len(TUNED_SUFFIX)] in methods:
        return name[: -len(TUNED_SUFFIX)]
    return None
