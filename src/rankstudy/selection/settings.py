"""The ``tune`` block's settings, declared once: what each may be, its default and its help
(:class:`rankstudy.util.params.Param`). The train and tune jobs read them as a
:class:`TuneSettings`, :func:`check_settings` checks them (the config check, before any job, and
the jobs), and the config schema's entries for them, at the study's ``tune`` and a method's own
``tune``, are built from them (:func:`tune_schema`, by :func:`rankstudy.pipeline.config.load_schema`)."""

from __future__ import annotations

from dataclasses import dataclass, field

from rankstudy.selection.pruning import PrunerError, pruner_settings
from rankstudy.util.params import Choice, Integer, Mapping, Param, ParamError, Real, Text, check_value

SAMPLERS = ("tpe", "random")

TUNE_PARAMS: dict[str, Param] = {
    "sampler": Param(Choice(SAMPLERS, "sampler"), "tpe", help="Optuna's TPE, or random search (the control)"),
    "trials": Param(Integer(1), 20, help="trials per method and fold (complete, diverged or pruned ones count)"),
    "cpu_seconds": Param([None, Real(0, low_open=True)], None,
                         help="a cap on the CPU-seconds of a method's trials on one fold (null for none)"),
    "workers": Param(Integer(1), 1, help="Snakemake jobs sharing the trials of one method and fold (each runs "
                                         "trials in its own process)"),
    "pruner": Param([None, Text(what="a pruner's name"), Mapping()], "none",
                    help="stop trials whose validation curve falls behind (Optuna's pruners, "
                         "rankstudy.selection.pruning): none, median, successive_halving or hyperband, or a mapping "
                         "{kind: hyperband, min_resource: 1, max_resource: auto, reduction_factor: 3} (median: "
                         "startup_trials, warmup_steps, interval_steps; successive_halving: min_resource, "
                         "reduction_factor, min_early_stopping_rate); a method's own steps are its own (rounds, "
                         "epochs, passes)"),
    "train_fraction": Param(Real(0, 1, low_open=True), 1.0,
                            help="the share of each fold's training queries the trials fit on (a seeded subsample, "
                                 "the same for every worker); the chosen trial is then fitted on them all"),
}
# what a method's own tune block may set over the study's (workers are the study's: one DAG shape)
METHOD_SETTINGS = ("trials", "cpu_seconds", "sampler", "pruner", "train_fraction")


class TuningError(ValueError):
    """A tuning setting a method cannot take; ``key`` is relative to the method (``tune.space.l2``)."""

    def __init__(self, key: str, problem: str) -> None:
        self.key, self.problem = key, problem
        super().__init__(f"{key}: {problem}")


def _default(name: str):
    return field(default_factory=lambda: TUNE_PARAMS[name].default)


@dataclass(frozen=True)
class TuneSettings:
    """The ``tune`` block as one method's train job sees it (study-wide, overridden per method);
    the declared settings' defaults are :data:`TUNE_PARAMS`'."""

    sampler: str = _default("sampler")
    trials: int = _default("trials")
    cpu_seconds: float | None = _default("cpu_seconds")
    workers: int = _default("workers")
    pruner: object = _default("pruner")  # as written: a name, a mapping with kind, or None (selection.pruning)
    train_fraction: float = _default("train_fraction")  # the trials' share of training queries (the model: all)
    space: dict = field(default_factory=dict)  # {param: space config data, or None: not tuned}
    base_method: str | None = None  # the default twin whose selection on the fold is the first trial
    grid: dict = field(default_factory=dict)  # the untuned method's grid: its candidates open the study

    @classmethod
    def from_config(cls, data: dict) -> "TuneSettings":
        known = {k: v for k, v in data.items() if k in cls.__dataclass_fields__}
        return cls(**known)


def check_settings(settings: TuneSettings) -> None:
    """TuningError naming the key (``tune.trials``) of the first setting its declaration refuses,
    then of a pruner its own settings refuse."""
    for name, param in TUNE_PARAMS.items():
        try:
            check_value(name, getattr(settings, name), param.constraints)
        except ParamError as exc:
            raise TuningError(f"tune.{name}", exc.problem) from None
    try:
        pruner_settings(settings.pruner)
    except PrunerError as exc:
        raise TuningError(f"tune.{exc.key}", exc.problem) from None


def tune_schema(method: bool = False) -> dict[str, dict]:
    """The config schema's entries for the declared settings: the study's ``tune`` block's, with
    their defaults, or (``method``) those a method's own ``tune`` may set, without (a method's
    unset key takes the study's)."""
    names = METHOD_SETTINGS if method else TUNE_PARAMS
    return {name: TUNE_PARAMS[name].json_schema(default=not method) for name in names}
