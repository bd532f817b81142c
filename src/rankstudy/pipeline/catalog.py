"""``python -m rankstudy list [methods|losses|solvers|metrics|conventions|datasets|studies]``:
what a config can name, read from the registries themselves (so it cannot drift from them):
one line each, and for a method kind its parameters with their defaults and what each may be."""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]


def _first_line(obj, limit: int = 110) -> str:
    """The docstring's first sentence (its first bullet's, for a docstring of bullets), shortened."""
    return _sentence(" ".join((inspect.getdoc(obj) or "").split("\n\n")[0].split()).lstrip("* "), limit)


def _sentence(text: str, limit: int = 110) -> str:
    sentence = re.split(r"(?<!\bal)(?<!e\.g)(?<!i\.e)\.\s", text)[0].rstrip(".")  # "et al." ends no sentence
    return sentence if len(sentence) <= limit else sentence[:limit - 3].rsplit(" ", 1)[0] + " ..."


def methods(detail: bool = True) -> list[str]:
    from rankstudy.util.params import describe
    from rankstudy.rankers.registry import RANKERS

    lines = []
    for kind in sorted(RANKERS):
        cls = RANKERS[kind]
        lines.append(f"{kind}: {_first_line(cls)}")
        if detail:
            defaults = {p.name: p.default for p in list(inspect.signature(cls.__init__).parameters.values())[1:]}
            for name, default in defaults.items():
                allowed = describe(cls.parameter_constraints.get(name, []))
                lines.append(f"    {name} = {default!r}" + (f"  ({allowed})" if allowed else ""))
    return lines


def losses(detail: bool = True) -> list[str]:
    from rankstudy.losses.registry import LOSSES, loss_options

    lines = []
    for name in sorted(LOSSES):
        entry = LOSSES[name]
        facts = ", ".join(f for f, on in (("needs a bias", entry.bias), ("not smooth", not entry.smooth),
                                          ("convex", entry.convex)) if on)
        options = loss_options(name)
        lines.append(f"{name}: {_first_line(entry.function)}" + (f" [{facts}]" if facts else "")
                     + (f" options: {', '.join(options)}" if detail and options else ""))
    return lines


def solvers(detail: bool = True) -> list[str]:
    from rankstudy.solvers.registry import SOLVERS

    return [f"{name}: {_first_line(SOLVERS[name].cls)}" for name in SOLVERS]


def metrics(detail: bool = True) -> list[str]:
    from rankstudy.evaluation.metrics import METRICS

    forms = {"optional": "{0}, {0}@k", "none": "{0}", "required": "{0}@k"}
    return [f"{forms[m.cutoff].format(name)}: {_first_line(m.compute)}" for name, m in METRICS.items()]


def conventions(detail: bool = True) -> list[str]:
    from rankstudy.evaluation import conventions as c

    return [f"{name}: {value}" for name, value in getattr(c, "NAMED", {}).items()]


def datasets(detail: bool = True) -> list[str]:
    from rankstudy.data.registry import load_registries

    registry = load_registries([REPO / "config" / "datasets.yaml"])
    return [f"{name}: source {entry.get('source', 'download')}, {entry.get('folds', 5)} fold(s)"
            + (f", {entry['n_features']} features" if entry.get("n_features") else "")
            for name, entry in registry.items()]


def studies(detail: bool = True) -> list[str]:
    lines = []
    for path in sorted((REPO / "config" / "studies").glob("*.yaml")):
        head = []
        for line in path.read_text().splitlines():
            if not line.startswith("#") or line.lstrip("# ").startswith("Run:"):
                break
            head.append(line.lstrip("# ").strip())
        lines.append(f"{path.stem}: {_sentence(' '.join(head), 140)}  (--configfile {path.relative_to(REPO)})")
    return lines


SECTIONS: dict[str, Callable[[bool], list[str]]] = {
    "methods": methods, "losses": losses, "solvers": solvers, "metrics": metrics,
    "conventions": conventions, "datasets": datasets, "studies": studies,
}
