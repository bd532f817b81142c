"""Protocol forensics: a study rerun with one open choice of its protocol changed at a time.

A forensics run (config ``scorecard.forensics``) names base studies (a study config and the
methods to rerun) and variants (a config fragment each). Every (base, variant) pair becomes a
study of its own, ``{base}.{variant}``, with the base's config, only the named methods, and the
fragment merged over it; it runs like any member of the scorecard run, so it gets its own runs,
tables and MLflow runs, and shares data and features with any study of the same protocol.
"""

from __future__ import annotations

import copy

AS_STUDY = "as-study"  # the variant that changes nothing: the base study's own runs


def merged(base: dict, fragment: dict) -> dict:
    """``base`` with ``fragment`` merged in: mappings key by key, anything else replaced (as
    Snakemake merges config files)."""
    out = copy.deepcopy(base)
    for key, value in fragment.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merged(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def variant_study(base_study: str, variant: str) -> str:
    return base_study if variant == AS_STUDY else f"{base_study}.{variant}"


def variant_config(base: dict, methods: list[str], variant: str, spec: dict, where: str) -> dict:
    """The config of the base study rerun under one variant.

    ``spec``: ``set`` (a fragment merged over the config), ``each_method`` (a fragment merged over
    every kept method; a ``grid`` key only where the method has that grid parameter, so a C grid
    leaves LightGBM methods alone), ``dataset`` (another data set, e.g. another normalisation
    of the same documents). The paper layout, sweep and smear plots are left out: the forensics
    reads the cells from the base's paper section. ``where`` names the config key in errors.
    """
    unknown = [m for m in methods if m not in base.get("methods", {})]
    if unknown:
        raise ValueError(f"config key {where}: methods {unknown} are not in study {base.get('study')!r} "
                         f"(it has {sorted(base.get('methods', {}))})")
    config = copy.deepcopy({k: v for k, v in base.items() if k not in ("paper", "datasets")})
    config["methods"] = {m: base["methods"][m] for m in methods}
    config["run_methods"] = list(methods)  # the defaults' methods merge in beside a study's own
    for key in ("sweep", "delta_smear"):
        config.get("report", {}).pop(key, None)
    config = merged(config, spec.get("set", {}))
    each = spec.get("each_method", {})
    for name, method in config["methods"].items():
        grid = {k: v for k, v in each.get("grid", {}).items() if k in method.get("grid", {})}
        config["methods"][name] = merged(method, {**{k: v for k, v in each.items() if k != "grid"},
                                                  **({"grid": grid} if grid else {})})
    baseline = config.get("report", {}).get("baseline")
    if baseline not in config["methods"]:  # the comparison table needs one of the kept methods
        config.setdefault("report", {})["baseline"] = methods[0]
    config["study"] = variant_study(base["study"], variant)
    return config
