"""One home for every parameter: what it may be, its default and its tuning space, declared
once (:class:`Param`) and checked in one place: by the config check before any job runs, and
by the ranker when it is built (:class:`rankstudy.rankers.base.Ranker`).

A ranker class sets ``parameters = {name: Param(constraints, default, space=...)}`` (as
scikit-learn's ``_parameter_constraints``, plus the default and the search space); its
``__init__`` is made from the declarations and only stores the values. A value is valid when one
of its constraints accepts it. A constraint is a small object that can say whether it accepts a
value, describe itself ("an integer >= 1", for errors and for ``rankstudy list``), and read a
string as its type (a value from ``snakemake --config``, or ``1e-2``, which YAML 1.1 reads as a
string). ``None`` in a list stands for "null is allowed".

A search space (:class:`LogUniform`, :class:`Uniform`, :class:`IntRange`, :class:`Choices`)
is what tuning draws the parameter from (:mod:`rankstudy.selection.tuning`); a space that leaves
the parameter's constraints is refused when the class is defined, and one given in a config
before any job runs.

Relations between parameters (a solver that cannot fit the loss, pairs without the quadratic
functional) are the ranker's ``check_combination``; both raise :class:`ParamError`, which names
the parameter so the config check can name the key.
"""

from __future__ import annotations

import copy
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

    def json_schema(self) -> dict:
        """The JSON schema of the values it accepts, as far as a schema can say (a Real's
        finiteness, a Text's check: the declaration's own check says the rest)."""
        raise NotImplementedError


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

    json_type = "number"

    def json_schema(self) -> dict:
        schema = {"type": self.json_type}
        if self.low is not None:
            schema["exclusiveMinimum" if self.low_open else "minimum"] = self.low
        if self.high is not None:
            schema["exclusiveMaximum" if self.high_open else "maximum"] = self.high
        return schema

    def read(self, text: str):
        try:  # YAML 1.2 numbers too: 1e-2 (a string to YAML 1.1), .5, 1_000 are numbers here
            return float(text.strip().replace("_", "")) if text.strip() else text
        except ValueError:
            return text


class Integer(Real):
    """An integer (not a bool; 3.0 is not one either) within optional bounds."""

    json_type = "integer"

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

    def json_schema(self) -> dict:
        return {"enum": self.options}


class Boolean(Constraint):
    def accepts(self, value) -> bool:
        return isinstance(value, bool)

    def describe(self) -> str:
        return "true or false"

    def json_schema(self) -> dict:
        return {"type": "boolean"}

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

    def json_schema(self) -> dict:
        return {"type": "string"}


class Mapping(Constraint):
    def accepts(self, value) -> bool:
        return isinstance(value, dict)

    def describe(self) -> str:
        return "a mapping"

    def json_schema(self) -> dict:
        return {"type": "object"}


class Listing(Constraint):
    """A list whose items all satisfy ``item`` (any items if None)."""

    def __init__(self, item: Constraint | None = None, what: str = "a list") -> None:
        self.item, self.what = item, what

    def accepts(self, value) -> bool:
        return isinstance(value, list) and (self.item is None or all(self.item.accepts(v) for v in value))

    def describe(self) -> str:
        return self.what

    def json_schema(self) -> dict:
        return {"type": "array", **({"items": self.item.json_schema()} if self.item is not None else {})}


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


def json_schema(constraints: list) -> dict:
    """The JSON schema of a constraint list: one alternative as it is, ``None`` as null (joined
    to a typed alternative's type, whose bounds then apply to numbers only, as JSON Schema reads
    them), several as ``anyOf``."""
    real = [c.json_schema() for c in constraints if c is not None]
    if None in constraints:
        if len(real) == 1 and "type" in real[0]:
            return {**real[0], "type": [real[0]["type"], "null"]}
        if len(real) == 1 and "enum" in real[0]:
            return {"enum": [*real[0]["enum"], None]}
        real.append({"type": "null"})
    return real[0] if len(real) == 1 else {"anyOf": real}


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


# -- search spaces ------------------------------------------------------------------------------


class Space:
    """Where tuning draws one parameter from: a small piece of data that Optuna's trial turns into
    a value (:meth:`suggest`), that says which values bound it (:meth:`extremes`, checked
    against the parameter's constraints) and reads and writes itself as config data
    (``{log_uniform: [1e-6, 1]}``, :func:`space_from_config`)."""

    key: str = ""

    def suggest(self, trial, name: str):
        raise NotImplementedError

    def extremes(self) -> list:
        raise NotImplementedError

    def holds(self, value) -> bool:
        """Whether ``value`` is one the space can draw (tuning's first trial, a method's own setting)."""
        raise NotImplementedError

    def stored(self, value):
        """What Optuna's trial holds for ``value`` (to enqueue it as a trial)."""
        return value

    def to_config(self) -> dict:
        raise NotImplementedError

    def describe(self) -> str:
        raise NotImplementedError

    def __eq__(self, other) -> bool:
        return type(self) is type(other) and self.to_config() == other.to_config()

    def __hash__(self) -> int:
        return hash(repr(self.to_config()))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.to_config()[self.key]!r})"


class _Range(Space):
    def __init__(self, low, high) -> None:
        if not (isinstance(low, numbers.Real) and isinstance(high, numbers.Real)) or isinstance(low, bool) \
                or isinstance(high, bool) or not math.isfinite(low) or not math.isfinite(high) or low >= high:
            raise ValueError(f"{self.key} needs two finite numbers, the lower first, got [{low!r}, {high!r}]")
        self.low, self.high = low, high

    def extremes(self) -> list:
        return [self.low, self.high]

    def holds(self, value) -> bool:
        # a None default (no bound) or a name is no point of a numeric range
        return isinstance(value, numbers.Real) and not isinstance(value, bool) and self.low <= value <= self.high

    def to_config(self) -> dict:
        return {self.key: [self.low, self.high]}


class Uniform(_Range):
    """A number uniform between ``low`` and ``high``."""

    key = "uniform"

    def suggest(self, trial, name: str):
        return trial.suggest_float(name, float(self.low), float(self.high))

    def describe(self) -> str:
        return f"uniform in [{self.low:g}, {self.high:g}]"


class LogUniform(_Range):
    """A positive number whose logarithm is uniform: rates, penalties, margins."""

    key = "log_uniform"

    def __init__(self, low, high) -> None:
        super().__init__(low, high)
        if low <= 0:
            raise ValueError(f"log_uniform needs a lower end > 0, got {low!r}")

    def suggest(self, trial, name: str):
        return trial.suggest_float(name, float(self.low), float(self.high), log=True)

    def describe(self) -> str:
        return f"log-uniform in [{self.low:g}, {self.high:g}]"


class IntRange(_Range):
    """An integer from ``low`` to ``high`` (both included), log-uniform with ``log``."""

    key = "int"

    def __init__(self, low, high, log: bool = False) -> None:
        super().__init__(low, high)
        if not all(isinstance(v, numbers.Integral) for v in (low, high)):
            raise ValueError(f"int needs two integers, got [{low!r}, {high!r}]")
        if log and low <= 0:
            raise ValueError(f"int_log needs a lower end > 0, got {low!r}")
        self.log = log
        self.key = "int_log" if log else "int"

    def suggest(self, trial, name: str):
        return trial.suggest_int(name, int(self.low), int(self.high), log=self.log)

    def describe(self) -> str:
        return f"an integer in [{self.low}, {self.high}]" + (" (log scale)" if self.log else "")


class Choices(Space):
    """One of some values (names, numbers, lists such as layer sizes)."""

    key = "choices"

    def __init__(self, options) -> None:
        if not isinstance(options, list | tuple) or not options:
            raise ValueError(f"choices needs a non-empty list of values, got {options!r}")
        self.options = [list(o) if isinstance(o, tuple) else o for o in options]

    @property
    def _by_index(self) -> bool:
        # Optuna's categorical takes only None, bool, int, float and str: lists go by their index
        return not all(o is None or isinstance(o, bool | int | float | str) for o in self.options)

    def suggest(self, trial, name: str):
        if not self._by_index:
            return trial.suggest_categorical(name, self.options)
        return self.options[trial.suggest_categorical(name, list(range(len(self.options))))]

    def extremes(self) -> list:
        return list(self.options)

    def holds(self, value) -> bool:
        return (list(value) if isinstance(value, tuple) else value) in self.options

    def stored(self, value):
        value = list(value) if isinstance(value, tuple) else value
        return self.options.index(value) if self._by_index else value

    def to_config(self) -> dict:
        return {self.key: list(self.options)}

    def describe(self) -> str:
        return f"one of {', '.join(map(repr, self.options))}"


SPACES = {"uniform": Uniform, "log_uniform": LogUniform, "int": IntRange, "int_log": IntRange, "choices": Choices}


def space_from_config(data) -> Space:
    """A space from config data: ``{log_uniform: [lo, hi]}``, ``{uniform: [lo, hi]}``,
    ``{int: [lo, hi]}``, ``{int_log: [lo, hi]}`` or ``{choices: [a, b, ...]}``; ValueError saying
    which forms there are otherwise."""
    forms = ", ".join(f"{{{k}: [...]}}" for k in SPACES)
    if not isinstance(data, dict) or len(data) != 1 or next(iter(data)) not in SPACES:
        raise ValueError(f"must be one of {forms}, got {data!r}")
    (key, value), = data.items()
    if key == "choices":
        return Choices(value)
    if not isinstance(value, list) or len(value) != 2:
        raise ValueError(f"{key} needs [low, high], got {value!r}")
    if key.startswith("int"):
        return IntRange(value[0], value[1], log=key == "int_log")
    return SPACES[key](value[0], value[1])


def space_problem(space: Space, constraints: list) -> str | None:
    """What is wrong with drawing a parameter with ``constraints`` from ``space`` (a bound or
    choice they refuse, or an integer parameter drawn as a real number), or None."""
    real = [c for c in constraints if c is not None]
    wants_int = real and all(isinstance(c, Integer) for c in real)
    if wants_int and isinstance(space, Uniform | LogUniform):
        return f"is an integer parameter: use {{int: [low, high]}} or {{int_log: [low, high]}}, not {space.key}"
    for value in space.extremes():
        if not (value is None and None in constraints) and not any(c.accepts(value) for c in real):
            return f"search space {space.describe()} leaves the parameter's range: {value!r} is not {describe(constraints)}"
    return None


# -- the declaration ----------------------------------------------------------------------------


class Param:
    """One parameter, declared once: ``constraints`` (a constraint or a list of them; ``None`` in
    it for "null is allowed"; a list is kept as it is, so a ranker's parameter that is a loss's
    option holds the loss's declared list itself), its ``default`` (copied for each object, so a
    list default is never shared), its tuning ``space`` (or None: not tuned unless a config gives
    one), ``tune_when`` (tuned only when the method's other parameters have these values, e.g. the
    attention scorer's width only for ``{"scorer": "attention"}``), a one-line ``help`` and, for a
    ranker that wraps a library (LightGBM, XGBoost, CatBoost), ``library``: that library's own
    default as text, which rankstudy's ``default`` may not be ("0.1"; "3, but 0 for YetiRank")."""

    def __init__(self, constraints, default=None, *, space: Space | None = None,
                 tune_when: dict | None = None, help: str = "", library: str = "") -> None:
        self.constraints = constraints if isinstance(constraints, list) else \
            list(constraints) if isinstance(constraints, tuple) else [constraints]
        self.default, self.space, self.tune_when, self.help = default, space, dict(tune_when or {}), help
        self.library = library

    def json_schema(self, default: bool = True) -> dict:
        """The JSON schema of its values, with its help and (``default``) its default: a config
        schema's entry built from the declaration (the config's tune block)."""
        schema = json_schema(self.constraints)
        if self.help:
            schema["description"] = self.help
        if default:
            schema["default"] = copy.deepcopy(self.default)
        return schema

    def check_declaration(self, name: str, owner: str) -> None:
        """TypeError (a programming error, raised when the class is defined) when the default or
        the space leaves the constraints."""
        try:
            check_value(name, self.default, self.constraints, owner=owner)
        except ParamError as exc:
            raise TypeError(f"{owner}.{name}: the declared default {exc}") from None
        if self.space is not None and (problem := space_problem(self.space, self.constraints)):
            raise TypeError(f"{owner}.{name}: {problem}")

    def fresh_default(self):
        import copy

        return copy.deepcopy(self.default)

    def when(self, **fixed) -> "Param":
        """This declaration, tuned only when the other parameters also have the values ``fixed``
        (a scorer's width, composed into a ranker that has several scorers)."""
        return Param(self.constraints, self.default, space=self.space, tune_when={**self.tune_when, **fixed},
                     help=self.help, library=self.library)


def with_values(params: dict, values: dict) -> dict:
    """``params`` with ``values`` set (a copy); a dotted name sets one setting of a part's
    mapping (``solver_params.learning_rate``: the ``learning_rate`` of ``solver_params``)."""
    out = dict(params)
    for name, value in values.items():
        namespace, dot, key = name.partition(".")
        if dot:
            out[namespace] = {**(out.get(namespace) or {}), key: value}
        else:
            out[name] = value
    return out


def value_at(params: dict, name: str):
    """The value of ``name`` in ``params``; a dotted name is one setting of a part's mapping
    (KeyError when it is not set there)."""
    namespace, dot, key = name.partition(".")
    return (params[namespace] or {})[key] if dot else params[name]


# Every random seed's declaration: numpy's generators (SeedSequence) take integers >= 0 only, so
# a negative seed is refused when the config is checked, not mid-fit.
SEED = Param(Integer(0), 0, help="random seed")


def defaults(parameters: dict[str, Param]) -> dict:
    """``{name: default}`` of some declarations (a signature's defaults, written once)."""
    return {name: param.default for name, param in parameters.items()}
