"""What each parameter of a ranker may be, declared once per ranker class (as scikit-learn's
``_parameter_constraints``) and checked in one place: by the config check before any job runs,
and by the ranker when it is built (:class:`rankstudy.rankers.base.Ranker`).

A ranker class sets ``parameter_constraints = {name: [constraint, ...]}``: a value is valid when
one of its constraints accepts it. A constraint is a small object that can say whether it
accepts a value, describe itself ("an integer >= 1", for errors and for ``rankstudy list``),
and read a string as its type (a value from ``snakemake --config``, or ``1e-2``, which YAML 1.1
reads as a string). ``None`` in a list stands for "null is allowed".

Relations between parameters (a solver that cannot fit the loss, pairs without the quadratic
functional) are the ranker's ``check_combination``; both raise :class:`ParamError`, which names
the parameter so the config check can name the key.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Iterable
from typing import Any



class ParamError(ValueError):
    """A parameter value a ranker cannot take: ``param`` is its name, ``problem`` what is wrong
    ("must be an integer >= 1, got 0", or "unknown loss 'x'; valid: ...")."""

    def __init__(self, param: str, problem: str, *, owner: str = "") -> None:
        self.param, self.problem, self.owner = param, problem, owner
        lead = f"{owner}: " if owner else ""
        # "n_rounds must be ..." reads as a sentence; "unknown loss 'x'" already names the parameter
        super().__init__(f"{lead}{param} {problem}" if problem.startswith("must") else f"{lead}{problem}")


class Constraint:
    def accepts(self, value: Any) -> bool:
        raise NotImplementedError

    def describe(self) -> str:
        raise NotImplementedError

    def read(self, text: str) -> Any:
        """``text`` as a value of this constraint's type, or ``text`` itself when it is not one."""
        return text


def _bounds(low, high, low_open: bool, high_open: bool) -> str:
    parts = []
    if low is not None:
        parts.append(f"{'>' if low_open else '>='} {low:g}")
    if high is not None:
        parts.append(f"{'<' if high_open else '<='} {high:g}")
    return " and ".join(parts)


class Real(Constraint):
    """A finite number (an int is fine) within optional bounds (``low_open``: strictly above)."""

    def __init__(self, low: float | None = None, high: float | None = None, *, low_open: bool = False,
                 high_open: bool = False) -> None:
        self.low, self.high, self.low_open, self.high_open = low, high, low_open, high_open

    def accepts(self, value) -> bool:
        if not isinstance(value, numbers.Real) or isinstance(value, bool) or not math.isfinite(value):
            return False
        if self.low is not None and (value <= self.low if self.low_open else value < self.low):
            return False
        return self.high is None or (value < self.high if self.high_open else value <= self.high)

    def describe(self) -> str:
        bounds = _bounds(self.low, self.high, self.low_open, self.high_open)
        return f"a number {bounds}" if bounds else "a number"

    def read(self, text: str):
        try:  # YAML 1.2 numbers too: 1e-2 (a string to YAML 1.1), .5, 1_000 are numbers here
            return float(text.strip().replace("_", "")) if text.strip() else text
        except ValueError:
            return text


class Integer(Real):
    """An integer (not a bool; 3.0 is not one either) within optional bounds."""

    def accepts(self, value) -> bool:
        return isinstance(value, numbers.Integral) and not isinstance(value, bool) and super().accepts(value)

    def describe(self) -> str:
        bounds = _bounds(self.low, self.high, self.low_open, self.high_open)
        return f"an integer {bounds}" if bounds else "an integer"

    def read(self, text: str):
        try:
            return int(text.strip().replace("_", ""))
        except ValueError:
            return text


class Choice(Constraint):
    """One of some names; ``options`` may be a callable (a registry's names, read when checked,
    so declaring the constraint imports nothing). ``what`` names the kind of thing ("loss")."""

    def __init__(self, options: Iterable[str] | Callable[[], Iterable[str]], what: str = "") -> None:
        self._options, self.what = options, what

    @property
    def options(self) -> list[str]:
        return list(self._options() if callable(self._options) else self._options)

    def accepts(self, value) -> bool:
        return isinstance(value, str) and value in self.options

    def describe(self) -> str:
        return f"one of {', '.join(self.options)}"


class Boolean(Constraint):
    def accepts(self, value) -> bool:
        return isinstance(value, bool)

    def describe(self) -> str:
        return "true or false"

    def read(self, text: str):
        read = _yaml(text)
        return read if isinstance(read, bool) else text


class Text(Constraint):
    """Any string (checked further by the ranker, e.g. a metric name)."""

    def __init__(self, check: Callable[[str], object] | None = None, what: str = "a string") -> None:
        self.check, self.what = check, what

    def accepts(self, value) -> bool:
        if not isinstance(value, str):
            return False
        if self.check is None:
            return True
        try:
            self.check(value)
        except ValueError:
            return False
        return True

    def describe(self) -> str:
        return self.what


class Mapping(Constraint):
    def accepts(self, value) -> bool:
        return isinstance(value, dict)

    def describe(self) -> str:
        return "a mapping"


class Listing(Constraint):
    """A list whose items all satisfy ``item`` (any items if None)."""

    def __init__(self, item: Constraint | None = None, what: str = "a list") -> None:
        self.item, self.what = item, what

    def accepts(self, value) -> bool:
        return isinstance(value, list) and (self.item is None or all(self.item.accepts(v) for v in value))

    def describe(self) -> str:
        return self.what


def _yaml(text: str):
    import yaml  # here: only `--config` text needs YAML, and a job that loads a model does not (10 ms)

    try:
        return yaml.safe_load(text)
    except yaml.YAMLError:
        return text


def describe(constraints: list) -> str:
    """"an integer >= 1 or null" for a parameter's constraint list."""
    words = [c.describe() for c in constraints if c is not None]
    if None in constraints:
        words.append("null")
    return " or ".join(words)


def check_value(name: str, value, constraints: list, owner: str = "") -> None:
    """ParamError unless one of ``constraints`` accepts ``value``."""
    if value is None and None in constraints:
        return
    real = [c for c in constraints if c is not None]
    if any(c.accepts(value) for c in real):
        return
    if len(real) == 1 and isinstance(real[0], Choice) and isinstance(value, str):
        choice = real[0]
        raise ParamError(name, f"unknown {choice.what or name} {value!r}; valid: {', '.join(choice.options)}",
                         owner=owner)
    raise ParamError(name, f"must be {describe(constraints)}, got {value!r}", owner=owner)


def read_value(value, constraints: list):
    """``value`` read as the type its constraints want when it is a string they do not take as
    it is (``'10'`` for an integer, ``'1e-2'`` for a number, ``'null'``); else unchanged."""
    if not isinstance(value, str) or any(c is not None and c.accepts(value) for c in constraints):
        return value
    if None in constraints and value.strip() in ("null", "None", "~", ""):
        return None
    for c in constraints:
        if c is None:
            continue
        read = c.read(value)
        if read is not value and c.accepts(read):
            return read
    return value
