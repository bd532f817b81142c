"""Reading a run's config files and ``--config`` values as YAML, strictly: a syntax error or a key
given twice in one mapping is one line naming the file and line (or the ``--config`` key), before
any job. PyYAML alone keeps the last of two equal keys silently, and Snakemake's own message for
bad YAML ("Config file is not valid JSON or YAML") names neither the file nor the line.

Light on purpose (PyYAML and the standard library): ``python -m rankstudy.pipeline.configfiles
FILE...`` is what ``workflow/bootstrap.py run`` runs on the ``--configfile`` files before
Snakemake, which parses those itself before the Snakefile can say anything."""

from __future__ import annotations

import math
import re
import sys
from collections.abc import Mapping
from pathlib import Path

import yaml

from rankstudy.pipeline.errors import ConfigError


class _StrictLoader(yaml.SafeLoader):
    """YAML that refuses a key given twice in one mapping (PyYAML keeps the last silently: two
    methods under one name became one, trained as the second)."""


def _mapping_without_duplicates(loader, node, deep=False):
    seen: dict = {}
    for key_node, _ in node.value:
        if key_node.tag == "tag:yaml.org,2002:merge":
            continue  # `<<: *anchor`: the anchor's keys come under the mapping's own (YAML's merge key)
        key = loader.construct_object(key_node, deep=deep)
        if key in seen:
            raise yaml.constructor.ConstructorError(
                None, None, f"key {key!r} is given twice (first on line {seen[key] + 1})", key_node.start_mark)
        seen[key] = key_node.start_mark.line
    return loader.construct_mapping(node, deep=deep)


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _mapping_without_duplicates)


def _problem(exc: yaml.YAMLError) -> str:
    problem = getattr(exc, "problem", None) or getattr(exc, "context", None) or str(exc)
    # PyYAML's words for a tab ("found character '\t' that cannot start any token") hide the cause
    return problem.replace("'\\t'", "'\\t' (a tab; indent with spaces)")


def read_config_files(paths) -> list:
    """Every config file of the run, read once and strictly: its values (``{}`` for an empty
    file), or ConfigError naming the file and line of a YAML error or of a key given twice in one
    mapping."""
    values = []
    for path in paths:
        try:
            text = Path(path).read_text()
            values.append(yaml.load(text, Loader=_StrictLoader) or {})  # noqa: S506 - a SafeLoader subclass
        except yaml.MarkedYAMLError as exc:
            mark = exc.problem_mark or exc.context_mark
            where = f"{path}:{mark.line + 1}" if mark else str(path)
            raise ConfigError(f"config file {where}: {_problem(exc)}") from None
    return values


def check_cli_values(given: Mapping) -> None:
    """ConfigError naming the key of a ``--config KEY=VALUE`` whose value is not valid YAML.
    Snakemake keeps such a value as the string written (``folds=[1,2`` as ``'[1,2'``), which
    a later check would then blame for its type rather than its syntax."""
    for key, value in given.items():
        if not isinstance(value, str):
            continue
        try:
            yaml.load(value, Loader=_StrictLoader)  # noqa: S506 - a SafeLoader subclass
        except yaml.MarkedYAMLError as exc:
            mark = exc.problem_mark or exc.context_mark
            at = f" at column {mark.column + 1}" if mark and mark.line == 0 else ""
            raise ConfigError(f"--config {key}={value}: not valid YAML{at}: {_problem(exc)}") from None


# YAML 1.2's core schema for plain scalars (PyYAML resolves YAML 1.1's, where an unsigned exponent
# makes 1.0e300 and 1e-2 strings): one reading for every value, from the files and --config alike
_NULL = re.compile(r"^(?:null|Null|NULL|~|)$")
_BOOL = re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$")
_INT = re.compile(r"^[-+]?[0-9]+$|^0o[0-7]+$|^0x[0-9a-fA-F]+$")
_FLOAT = re.compile(r"^[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?$")
_SPECIAL = {".inf": math.inf, ".Inf": math.inf, ".INF": math.inf, "+.inf": math.inf, "+.Inf": math.inf,
            "+.INF": math.inf, "-.inf": -math.inf, "-.Inf": -math.inf, "-.INF": -math.inf,
            ".nan": math.nan, ".NaN": math.nan, ".NAN": math.nan}


def yaml12_scalar(text: str):
    """A plain scalar as YAML 1.2's core schema reads it: null, a boolean, an integer, a number
    (``1.0e300``, ``1e-2``, ``.5``, ``.inf``) or else the string itself."""
    if _NULL.match(text):
        return None
    if _BOOL.match(text):
        return text.lower() == "true"
    if _INT.match(text):
        return int(text, 0) if text[:2] in ("0o", "0x") else int(text)
    if _FLOAT.match(text):
        return float(text)
    return _SPECIAL.get(text, text)


def yaml_values(value):
    """``value`` (a ``--config`` value's lists and mappings) with every string in it read as the
    YAML scalar it was written as (:func:`yaml12_scalar`): Snakemake reads them with YAML's
    BaseLoader, which keeps every scalar a string (``hidden: [64, 32]`` arrives as ``['64',
    '32']``), while the same text in a config file gives numbers, booleans and nulls. A quoted
    number cannot be told apart (the quotes are gone) and becomes the number."""
    if isinstance(value, dict):
        return {key: yaml_values(item) for key, item in value.items()}
    if isinstance(value, list):
        return [yaml_values(item) for item in value]
    return yaml12_scalar(value) if isinstance(value, str) else value


def main(argv: list[str]) -> int:
    """Check the files named in ``argv`` (a missing one is left to Snakemake, which names it); on
    the first problem, print it as one line and return 1."""
    try:
        read_config_files([path for path in argv if Path(path).is_file()])
    except ConfigError as exc:
        print(f"rankstudy: {exc}", file=sys.stderr)
        return 1
    except OSError as exc:
        print(f"rankstudy: config file {exc.filename}: {exc.strerror}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
