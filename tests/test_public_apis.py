"""Only public parts of the tools we build on (issue 44.3): no private module or name of Snakemake,
MLflow, Optuna or pytest-xdist is imported, and no private attribute of theirs is read or set,
anywhere in the project (src, workflow, benchmarks, tests, the Snakefile and its rules).

A private attribute is told apart by its owner's source: a ``_name`` (not a dunder) that the
tool's installed code defines (``def _name``, ``class _Name``, ``self._name = ...``, a
module-level ``_name = ...``) and ours does not. An attribute both define is taken for ours: the
check can miss a tool's private that shares a name with one of ours, never flag one of our own.

The one exception is written out below with its reason: when it goes, its entry must go too (the
test compares the exact set)."""

import ast
import functools
import importlib.util
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TOOLS = ("snakemake", "mlflow", "optuna", "xdist")

# (file, private name) pairs kept on purpose, each with its reason
ALLOWED = {
    # Snakemake 9 starts one more re-evaluation timer thread per finished job and has no public way
    # to stop it (snakemake/snakemake#3804); rankstudy.pipeline.snakemake_timers says why in full
    ("src/rankstudy/pipeline/snakemake_timers.py", "_schedule_reevalutation"),
    ("src/rankstudy/pipeline/snakemake_timers.py", "_open_jobs"),
    # its test: fails when Snakemake drops the method, so the patch is dropped with it
    ("tests/test_faults.py", "_schedule_reevalutation"),
    ("tests/test_faults.py", "_open_jobs"),
}

# what a file defines under a private name: def/class, self./cls. assignment, module or class level
DEFINED = re.compile(r"(?:\bdef\s+|\bclass\s+)(_[A-Za-z0-9]\w*)"
                     r"|\b(?:self|cls)\.(_[A-Za-z0-9]\w*)\s*(?::[^=\n]*)?=(?!=)"
                     r"|^[ \t]*(_[A-Za-z0-9]\w*)\s*(?::[^=\n]*)?=(?!=)", re.M)
ATTRIBUTE = re.compile(r"\.(_[A-Za-z0-9]\w*)\b")  # for the rule files, which ast cannot read


def private_definitions(files) -> set[str]:
    names = set()
    for path in files:
        for groups in DEFINED.findall(path.read_text(errors="replace")):
            names.update(g for g in groups if g)
    return names


@functools.cache  # about 3 s: the tools' sources are read once
def tool_private_names() -> dict[str, set[str]]:
    names = {}
    for tool in TOOLS:
        spec = importlib.util.find_spec(tool)
        assert spec is not None and spec.origin, f"{tool} is not installed"
        names[tool] = private_definitions(Path(spec.origin).parent.rglob("*.py"))
    return names


def is_private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def private_uses(source: str, tools: tuple[str, ...] = TOOLS) -> list[tuple[int, str]]:
    """(line, name) of every private attribute read or set in ``source`` (``x._name``, or
    getattr/setattr/hasattr/delattr with a ``"_name"`` literal), and of every private module or
    name imported from one of ``tools``."""
    uses = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute) and is_private(node.attr):
            uses.append((node.lineno, node.attr))
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
              and node.func.id in ("getattr", "setattr", "hasattr", "delattr") and len(node.args) > 1
              and isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str)
              and is_private(node.args[1].value)):
            uses.append((node.lineno, node.args[1].value))
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] in tools:
            uses += [(node.lineno, f"{node.module} (module)") for part in node.module.split(".") if is_private(part)]
            uses += [(node.lineno, f"{node.module}.{a.name}") for a in node.names if is_private(a.name)]
        elif isinstance(node, ast.Import):
            uses += [(node.lineno, f"{a.name} (module)") for a in node.names
                     if a.name.split(".")[0] in tools and any(map(is_private, a.name.split(".")))]
    return uses


def project_files() -> tuple[list[Path], list[Path]]:
    python = [p for d in ("src", "workflow", "benchmarks", "tests", "setup") for p in (ROOT / d).rglob("*.py")]
    rules = [ROOT / "Snakefile", *(ROOT / "workflow").rglob("*.smk")]
    return python, rules


def tool_privates_used() -> set[tuple[str, str]]:
    """(file, name) of each use of a tool's private part in the project."""
    python, rules = project_files()
    ours = private_definitions(python + rules)
    tools = set().union(*tool_private_names().values())
    found = set()
    for path in python + rules:
        text = path.read_text()
        uses = private_uses(text) if path.suffix == ".py" else [(0, m) for m in ATTRIBUTE.findall(text)]
        for _, name in uses:
            # an imported private module or name is the tool's by where it comes from
            if " (module)" in name or "." in name or (name in tools and name not in ours):
                found.add((str(path.relative_to(ROOT)), name))
    return found


def test_no_private_part_of_a_tool_is_used():
    used = tool_privates_used()
    assert used - ALLOWED == set(), "private parts of Snakemake, MLflow, Optuna or xdist used (use their public API)"
    assert ALLOWED - used == set(), "exceptions no longer used: remove them from ALLOWED"


# a made-up tool, so that these inputs name no real tool's private part
@pytest.mark.parametrize("source, expected", [
    ("import sometool\nsometool.sub._inner.utils\n", [(2, "_inner")]),
    ("from sometool.sub._impl import thing\n", [(1, "sometool.sub._impl (module)")]),
    ("from sometool.utils import _helper\n", [(1, "sometool.utils._helper")]),
    ("import sometool._version\n", [(1, "sometool._version (module)")]),
    ("getattr(handler, '_output_lock')\n", [(1, "_output_lock")]),
    ("x.__class__\nfrom sometool import public_name\n", []),
])
def test_private_uses_are_found(source, expected):
    assert private_uses(source, tools=("sometool",)) == expected


def test_a_tools_private_attribute_is_told_from_ours():
    tools = tool_private_names()
    assert "_output_lock" in tools["snakemake"]  # ColorizingTextHandler's, set in its __init__
    assert "_storage" in tools["optuna"]
    assert "_output_lock" not in private_definitions(project_files()[0])
