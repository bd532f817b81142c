"""Multi-fidelity tuning with Optuna's pruners: a trial whose validation curve falls behind the
other trials' at the same step is stopped early (Optuna's MedianPruner, SuccessiveHalvingPruner,
HyperbandPruner; no scheduler of ours). The ``tune.pruner`` setting, checked before any job (one
line naming the key), and the pruner it makes.

    pruner: hyperband                       # or none, median, successive_halving, with defaults
    pruner: {kind: hyperband, min_resource: 10, max_resource: 300, reduction_factor: 3}

A step is the ranker's own unit (a boosting round, an epoch, a pass; each ranker's docs say),
so resource settings are per method where methods differ (``methods.NAME.tune.pruner``)."""

from __future__ import annotations

import numbers

# each pruner's settings and their defaults (Optuna's, named as rankstudy names things)
PRUNERS: dict[str, dict] = {
    "none": {},
    "median": {"startup_trials": 5, "warmup_steps": 0, "interval_steps": 1},
    "successive_halving": {"min_resource": "auto", "reduction_factor": 4, "min_early_stopping_rate": 0},
    "hyperband": {"min_resource": 1, "max_resource": "auto", "reduction_factor": 3},
}
_LOWEST = {"startup_trials": 0, "warmup_steps": 0, "interval_steps": 1, "min_resource": 1, "max_resource": 1,
           "reduction_factor": 2, "min_early_stopping_rate": 0}
_AUTO = ("min_resource", "max_resource")  # may be "auto": Optuna estimates them from the first trials


class PrunerError(ValueError):
    """A pruner setting that cannot run; ``key`` is relative to the tune block (``pruner.min_resource``)."""

    def __init__(self, key: str, problem: str) -> None:
        self.key, self.problem = key, problem
        super().__init__(f"{key}: {problem}")


def pruner_settings(data) -> dict:
    """``{kind, settings...}`` from the config's ``pruner`` (a name, a mapping with ``kind``, or
    None), every setting filled in; PrunerError naming the first problem."""
    if data is None:
        data = "none"
    if isinstance(data, str):
        data = {"kind": data}
    if not isinstance(data, dict):
        raise PrunerError("pruner", f"must be a name ({', '.join(PRUNERS)}) or a mapping with kind, got {data!r}")
    kind = data.get("kind", "none")
    if kind not in PRUNERS:
        raise PrunerError("pruner.kind" if "kind" in data and len(data) > 1 else "pruner",
                          f"unknown pruner {kind!r}; valid: {', '.join(PRUNERS)}")
    settings = {"kind": kind, **PRUNERS[kind]}
    for key, value in data.items():
        if key == "kind":
            continue
        if key not in PRUNERS[kind]:
            valid = ", ".join(PRUNERS[kind]) or "none"
            raise PrunerError(f"pruner.{key}", f"is not a setting of the {kind} pruner (its settings: {valid})")
        auto = key in _AUTO and value == "auto"
        if not auto and not (isinstance(value, numbers.Integral) and not isinstance(value, bool)
                             and value >= _LOWEST[key]):
            what = f"an integer >= {_LOWEST[key]}" + (" or auto" if key in _AUTO else "")
            if key == "reduction_factor":
                what += " (each rung keeps 1/reduction_factor of the trials: 1 would keep them all)"
            raise PrunerError(f"pruner.{key}", f"must be {what}, got {value!r}")
        settings[key] = value
    low, high = settings.get("min_resource"), settings.get("max_resource")
    if isinstance(low, int) and isinstance(high, int) and low > high:
        raise PrunerError("pruner.min_resource", f"is {low}, above max_resource {high}")
    return settings


def make_pruner(settings: dict):
    """Optuna's pruner for :func:`pruner_settings`' output (NopPruner for none)."""
    import optuna

    kind = settings["kind"]
    if kind == "median":
        return optuna.pruners.MedianPruner(n_startup_trials=settings["startup_trials"],
                                           n_warmup_steps=settings["warmup_steps"],
                                           interval_steps=settings["interval_steps"])
    if kind == "successive_halving":
        return optuna.pruners.SuccessiveHalvingPruner(min_resource=settings["min_resource"],
                                                      reduction_factor=settings["reduction_factor"],
                                                      min_early_stopping_rate=settings["min_early_stopping_rate"])
    if kind == "hyperband":
        return optuna.pruners.HyperbandPruner(min_resource=settings["min_resource"],
                                              max_resource=settings["max_resource"],
                                              reduction_factor=settings["reduction_factor"])
    return optuna.pruners.NopPruner()


_MARKS = sorted(frozenset(int(2 ** (k / 2)) for k in range(128)))


class ReportSchedule:
    """Which of a trial's steps go to Optuna: the first step reported at or past each mark of about
    two per doubling (1, 2, 4, 5, 8, 11, 16, 22, 32, 45, 64, ...): every step of a loop that reports
    each round, steps 10, 20, 30, 40, 50, 70, 90, ... of one that reports every tenth (RankBoost),
    the same steps for every trial of a method. Optuna's journal writes (and syncs) each value: all
    300 rounds of a LightGBM fit would cost a second a trial; the pruners compare trials at the
    steps both reported, and a rung is checked at the first reported step past it."""

    def __init__(self) -> None:
        self.next = 0  # index of the next mark

    def __call__(self, step: int) -> bool:
        if self.next >= len(_MARKS) or step < _MARKS[self.next]:
            return False
        while self.next < len(_MARKS) and _MARKS[self.next] <= step:
            self.next += 1
        return True
