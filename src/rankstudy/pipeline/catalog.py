"""``python -m rankstudy list [methods|scorers|losses|solvers|metrics|conventions|datasets|studies]``:
what a config can name, read from the registries themselves (so it cannot drift from them): one
line each (a docstring's first sentence, as plain text), and for a method kind or a scorer its
parameters with their defaults, what each may be and the space tuning draws it from.
``--example KIND`` prints a method of that kind as a config block (:func:`example`)."""

from __future__ import annotations

import inspect
import re
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
WIDTH = 100  # a summary longer than this wraps, indented under its name

# words before a full stop that end no sentence: "Eq. 10", "et al.", "s.t.", "e.g."
_ABBREVIATIONS = {"al", "e.g", "i.e", "eq", "eqs", "s.t", "vs", "cf", "fig", "figs", "sec", "etc", "resp",
                  "approx", "no", "ref", "refs", "ch", "p", "pp"}
# a first paragraph that does not say what the thing is (a list of its parameters, its history
# format, a pointer elsewhere): the next source is read instead
_NOT_A_SUMMARY = re.compile(r"^(\* |- |``\w+``\s*[:(=]|History:|See (the module docstring|:))")


def plain(text: str) -> str:
    """reST and Sphinx markup as the text a reader sees: ``:func:`~a.b.f``` -> ``f``,
    ``:mod:`a.b``` -> ``a.b``, ``:class:`title <a.B>``` -> ``title``, double backquotes, default
    roles, emphasis and escapes dropped; "(module docstring)" pointers left out."""
    def role(m: re.Match) -> str:
        target = m[1]
        if titled := re.fullmatch(r"(.+?)\s*<[^>]+>", target):
            return titled[1]
        return target[1:].rsplit(".", 1)[-1] if target.startswith("~") else target.lstrip("!")

    text = re.sub(r":[\w:.-]+:`([^`]+)`", role, text)
    text = re.sub(r"``(.+?)``", r"\1", text)
    text = re.sub(r"(?<![\w`])`([^`]+)`(?![\w`])", r"\1", text)
    text = re.sub(r"\*\*(\S(?:.*?\S)?)\*\*", r"\1", text)
    text = re.sub(r"(?<![\w*\\])\*(\S(?:[^*]*?\S)?)\*(?![\w*])", r"\1", text)
    text = re.sub(r"\\(.)", r"\1", text)
    text = re.sub(r"\s*\([^()]*module docstring[^()]*\)", "", text)
    return re.sub(r"::$", ":", text)


def first_sentence(text: str) -> str:
    """The first sentence of ``text`` (whitespace folded), whole: it ends at a full stop followed
    by a letter, a quote or the end, not after an abbreviation ("et al.", "s.t.", "e.g.") and not
    before a number ("Eq. 10")."""
    text = " ".join(text.split())
    for m in re.finditer(r"([.!?])(\s+|$)", text):
        before = re.search(r"([\w.]+)$", text[:m.start()])
        word = before[1].lower() if before else ""
        after = text[m.end():m.end() + 1]
        if m.end() == len(text) or (word not in _ABBREVIATIONS and (after.isalpha() or after in "\"'(`*")):
            return text[:m.start() + 1].rstrip(".") if m[1] == "." else text[:m.start() + 1]
    return text


def summary(*objects) -> str:
    """The plain first sentence of the first of ``objects`` (classes, functions or modules) whose
    docstring opens with a summary; "" when none does."""
    for obj in objects:
        paragraph = " ".join((inspect.getdoc(obj) or "").split("\n\n")[0].split())
        if paragraph and not _NOT_A_SUMMARY.match(paragraph):
            return plain(first_sentence(paragraph))
    return ""


def entry(name: str, text: str) -> list[str]:
    """``name: text``, wrapped at WIDTH with the continuation lines indented."""
    return textwrap.wrap(f"{name}: {text}", WIDTH, subsequent_indent="      ", break_on_hyphens=False) or [name]


def _module(obj):
    return sys.modules[obj.__module__]


# -- method kinds and their parameters ----------------------------------------------------------


def declared(cls) -> dict[str, tuple]:
    """``{name: (default, constraints, space or None, help)}`` of a ranker's parameters, from its
    ``parameters`` declarations (:class:`rankstudy.util.params.Param`)."""
    return {name: (p.default, p.constraints, p.space, p.help) for name, p in cls.parameters.items()}


def library_default(cls, name: str) -> str:
    """"LightGBM's own default: 0.1" for a parameter of a ranker that wraps a library and declares
    the library's own default (Param.library), which rankstudy's may not be; else ''."""
    param = (getattr(cls, "parameters", None) or {}).get(name)
    library = getattr(cls, "library", "")
    return f"{library}'s own default: {param.library}" if library and param is not None and param.library else ""


def parameter_lines(name: str, default, constraints: list, space, help: str = "", library: str = "") -> list[str]:
    from rankstudy.util.params import describe

    # "name = default  (help: what it may be; tuned: its space; L's own default: x)": one
    # parenthesis, which the docs' reference pages split into their columns (docs/hooks.py)
    about = (f"{help}: " if help else "") + describe(constraints) \
        + (f"; tuned: {space.describe()}" if space is not None else "") + (f"; {library}" if library else "")
    line = f"{name} = {default!r}" + (f"  ({about})" if about else "")
    return textwrap.wrap(line, WIDTH, initial_indent="    ", subsequent_indent="        ", break_on_hyphens=False)


def methods(detail: bool = True) -> list[str]:
    from rankstudy.rankers.registry import RANKERS

    lines = []
    for kind in sorted(RANKERS):
        cls = RANKERS[kind]
        lines += entry(kind, summary(_module(cls), cls))  # a ranker's module says what it is
        if detail:
            for name, (default, constraints, space, help) in declared(cls).items():
                lines += parameter_lines(name, default, constraints, space, help, library_default(cls, name))
    return lines


# -- the neural ranker's scorers ------------------------------------------------------------------


def scorer_classes() -> dict[str, type]:
    """The neural ranker's scorers by the name its ``scorer`` parameter takes."""
    from rankstudy.rankers.neural import SCORERS
    from rankstudy.scorers.base import Scorer

    found, todo = {}, list(Scorer.__subclasses__())
    while todo:
        cls = todo.pop()
        todo += cls.__subclasses__()
        if cls.name in SCORERS:
            found[cls.name] = cls
    return {name: found[name] for name in SCORERS if name in found}


def scorer_parameters(cls) -> dict[str, tuple]:
    """A scorer's parameters as the neural ranker takes them (its default, constraints and
    tuning space there): the scorer's own declarations when it has them, else the names of its
    ``__init__`` that the ranker passes on."""
    from rankstudy.rankers import neural
    from rankstudy.util.params import Choice

    ranker = declared(neural.NeuralRanker)
    own = getattr(cls, "parameters", None) or {}
    names = list(own) or [p for p in list(inspect.signature(cls.__init__).parameters)[1:]]
    found = {name: (own[name].default, own[name].constraints, own[name].space, own[name].help) if name in own
             else ranker[name] for name in names if name in own or name in ranker}
    # the ranker takes every scorer's activations; this scorer takes its own
    if "activation" in found and cls.name in getattr(neural, "ACTIVATIONS", {}):
        default, _, space, help = found["activation"]
        found["activation"] = (default, [Choice(neural.ACTIVATIONS[cls.name], "activation")], space, help)
    return found


def scorers(detail: bool = True) -> list[str]:
    lines = []
    for name, cls in scorer_classes().items():
        lines += entry(name, f"{summary(_module(cls), cls)} (kind neural, scorer: {name})")
        if detail:
            for param, (default, constraints, space, help) in scorer_parameters(cls).items():
                lines += parameter_lines(param, default, constraints, space, help)
    return lines


# -- the rest ---------------------------------------------------------------------------------------


def losses(detail: bool = True) -> list[str]:
    from rankstudy.losses.registry import LOSSES, loss_options

    lines = []
    for name in sorted(LOSSES):
        loss = LOSSES[name]
        facts = ", ".join(f for f, on in (("needs a bias", loss.bias), ("not smooth", not loss.smooth),
                                          ("convex", loss.convex)) if on)
        options = loss_options(name)
        lines += entry(name, summary(loss.function, _module(loss.function)) + (f" [{facts}]" if facts else "")
                       + (f" options: {', '.join(options)}" if detail and options else ""))
    return lines


def solvers(detail: bool = True) -> list[str]:
    from rankstudy.solvers.registry import SOLVERS

    lines = []
    for name, solver in SOLVERS.items():
        lines += entry(name, summary(solver.cls, _module(solver.cls)))
        if detail:  # a linear or separate method sets them in solver_params
            for param, p in solver.parameters.items():
                lines += parameter_lines(param, p.default, p.constraints, p.space, p.help)
    return lines


def metrics(detail: bool = True) -> list[str]:
    from rankstudy.evaluation.metrics import METRICS

    forms = {"optional": "{0}, {0}@k", "none": "{0}", "required": "{0}@k"}
    return [line for name, m in METRICS.items() for line in entry(forms[m.cutoff].format(name), summary(m.compute))]


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
        lines += entry(path.stem, f"{plain(first_sentence(' '.join(head)))}  "
                                  f"(--configfile {path.relative_to(REPO)})")
    return lines


SECTIONS: dict[str, Callable[[bool], list[str]]] = {
    "methods": methods, "scorers": scorers, "losses": losses, "solvers": solvers, "metrics": metrics,
    "conventions": conventions, "datasets": datasets, "studies": studies,
}


# -- a method as a config block ---------------------------------------------------------------------


def example(kind: str) -> str:
    """A method of ``kind`` as YAML to paste under a study's ``methods:``: every parameter at its
    default, one a line, with what it may be and its tuning space as a comment. It passes the
    config check as it is (tests/test_catalog.py checks every kind); the run's ``seed`` and
    relevance threshold are set once per run, so they are left out."""
    import yaml

    from rankstudy.rankers.registry import ranker_class
    from rankstudy.selection.spec import RUN_PARAMS
    from rankstudy.util.params import describe

    cls = ranker_class(kind)
    params = {name: spec for name, spec in declared(cls).items() if name not in RUN_PARAMS}
    values = {name: yaml.safe_dump(_data(default), default_flow_style=True, width=10**6).strip()
              .removesuffix("...").strip() for name, (default, *_) in params.items()}
    width = max((len(name) + len(text) for name, text in values.items()), default=0) + 10  # "      n: v  #"
    lines = [f"# {line}" for line in entry(kind, summary(_module(cls), cls))]
    lines += ["# Every parameter at its default: keep the ones you change. A grid (grid: {name: [a, b]})",
              "# is searched on the validation split; `python -m rankstudy list methods` lists every kind.",
              "methods:", f"  {kind}:", f"    kind: {kind}"]
    if params:
        lines.append("    params:")
    for name, (default, constraints, space, _) in params.items():
        comment = _brief(constraints) + (f"; tuned: {space.describe()}" if space is not None else "")
        line = f"      {name}: {values[name]}"
        lines.append(f"{line:<{width}}# {comment}" if comment else line)
    return "\n".join(lines) + "\n"


def _brief(constraints: list) -> str:
    """What a parameter may be, with a long list of names (every loss) said as a count."""
    from rankstudy.util.params import Choice, describe

    long = [c for c in constraints if isinstance(c, Choice) and len(c.options) > 8]
    if not long:
        return describe(constraints)
    rest = describe([c for c in constraints if c not in long])
    names = f"one of {len(long[0].options)} {long[0].what or 'name'} names (python -m rankstudy list)"
    return f"{names} or {rest}" if rest else names


def _data(value):
    """A default as YAML data (tuples as lists)."""
    if isinstance(value, tuple | list):
        return [_data(v) for v in value]
    if isinstance(value, dict):
        return {k: _data(v) for k, v in value.items()}
    return value
