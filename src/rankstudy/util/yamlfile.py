"""YAML read as ``yaml.safe_load`` reads it, with libyaml's parser where PyYAML was built with it
(PyPI's wheels are): the same values about ten times faster. The config schema and the data set
registry are read at every snakemake start, about 90 ms of pure-Python parsing between them."""

from __future__ import annotations

import yaml

SafeLoader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def safe_load(text: str):
    return yaml.load(text, Loader=SafeLoader)  # noqa: S506 - a safe loader
