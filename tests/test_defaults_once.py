"""Each parameter's default is written once (issue 44): where it is declared, a ranker's ``Param``
or a registered loss's signature. A helper, an inference routine or a metric that takes the same
parameter takes it without a default, or with the named constant the declaration uses
(``metrics.K``, ``rankdata.REL_THRESHOLD``, ``dcg.GAIN``, ...), never a second literal of it.

Read from the code: every function under src/rankstudy whose keyword has a declared name and a
literal default equal to a declared default of that name is a second copy. (Values as common as
0, None, booleans and "" are left out: they say "off" more than they choose.)"""

import ast
import inspect
from collections import defaultdict
from pathlib import Path

from rankstudy.losses.registry import LOSSES
from rankstudy.rankers.registry import RANKERS, ranker_class

SRC = Path(__file__).resolve().parents[1] / "src"


def telling(value) -> bool:
    return isinstance(value, int | float | str) and not isinstance(value, bool) and value not in (0, "")


def declared_defaults() -> tuple[dict[str, set], set[tuple[str, str]]]:
    """({parameter name: its declared defaults}, {(module, function) of each registered loss})."""
    defaults, losses = defaultdict(set), set()
    for kind in RANKERS:
        for name, param in ranker_class(kind).parameters.items():
            if telling(param.default):
                defaults[name].add(repr(param.default))
    for entry in LOSSES.values():
        fn = entry.function
        losses.add((fn.__module__, fn.__name__))
        for name, p in inspect.signature(fn).parameters.items():
            if p.default is not p.empty and telling(p.default):
                defaults[name].add(repr(p.default))
    return defaults, losses


def literal_defaults(source: str):
    """(line, function, parameter, repr of its literal default) of every function in ``source``."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            a = node.args
            positional = a.posonlyargs + a.args
            pairs = (list(zip(positional[len(positional) - len(a.defaults):], a.defaults))
                     + list(zip(a.kwonlyargs, a.kw_defaults)))
            for arg, default in pairs:
                if default is None:
                    continue
                try:
                    value = ast.literal_eval(default)
                except ValueError:
                    continue  # a name or an expression: the constant it reads is the one copy
                if telling(value):
                    yield node.lineno, node.name, arg.arg, repr(value)


def second_copies() -> list[str]:
    defaults, losses = declared_defaults()
    found = []
    for path in sorted((SRC / "rankstudy").rglob("*.py")):
        module = ".".join(path.relative_to(SRC).with_suffix("").parts)
        for line, function, name, value in literal_defaults(path.read_text()):
            if (module, function) not in losses and value in defaults.get(name, ()):
                found.append(f"{path.relative_to(SRC)}:{line} {function}({name}={value})")
    return found


def test_no_declared_default_is_written_twice():
    assert second_copies() == []


def test_a_second_literal_is_found():
    source = "def helper(x, *, k: int = 10, rel_threshold=1.0, seed=0, metric=K):\n    pass\n"
    assert list(literal_defaults(source)) == [(1, "helper", "k", "10"), (1, "helper", "rel_threshold", "1.0")]
    defaults, _ = declared_defaults()
    assert "10" in defaults["k"] and "1.0" in defaults["rel_threshold"]  # svm_ndcg's, through metrics.K etc.
