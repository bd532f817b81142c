"""Tuning one method on one fold with one budget: Optuna draws each parameter from the search
space its ranker declares (:class:`rankstudy.util.params.Param`'s ``space``, or the config's
``tune.space``), fits the trial on the training split and scores it on the validation split
(the test split is never seen); the best trial's model is the fold's model.

The study lives in a storage beside the results (Optuna's journal file) or in a database (a
PostgreSQL URL under SLURM), so:

* a rerun after a kill resumes from the finished trials (a killed worker loses its running
  trial only: it is marked ``lost`` when its process is found dead, or its heartbeat stale);
* several workers (Snakemake jobs) can share one study, each running trials in its own process;
* a changed search space, sampler, pruner, objective or base setting is a new study, said so.

The study opens with what the untuned method selects (:func:`base_candidates`), so the tuned
model is never below it on validation. The budget is a number of trials (those ``complete``,
``diverged`` or ``pruned``: Optuna's pruner, :mod:`rankstudy.selection.pruning`, may stop a trial
whose validation curve falls behind) and an optional cap on their CPU-seconds; the best trial is
chosen among the first ``trials`` by number, once no running trial could change which those are,
so a worker that started one trial too many (two workers racing for the last one) changes
nothing. ``train_fraction`` fits the trials on a seeded share of the training queries and the
chosen one on all of them; the untuned selection's score on all of them (the default twin's, or
its candidates fitted again) is then the floor the model kept must reach.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import math
import os
import socket
import threading
import time
import warnings
from collections.abc import Callable
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass

import numpy as np

from rankstudy.data.rankdata import RankData
from rankstudy.rankers.registry import ranker_class
from rankstudy.selection.pruning import ReportSchedule, make_pruner, pruner_settings
from rankstudy.selection.search import (COMPLETE, DIVERGED, PRUNED, AllDiverged, Candidate, candidate_row,
                                        diverged_message, fit_candidate)
from rankstudy.selection.settings import TuneSettings, TuningError, check_settings
from rankstudy.selection.spec import grid_candidates
from rankstudy.selection.tuning_storage import (HEARTBEAT_SECONDS, STALE_SECONDS, JournalWatch, StorageError,
                                                is_journal, lost_line, open_storage)
from rankstudy.util import intermediate
from rankstudy.util.params import ParamError, Space, space_from_config, space_problem, with_values

LOST = "lost"
COUNTED = (COMPLETE, DIVERGED, PRUNED)  # the trial states the budget counts


def tuning_space(kind: str, params: dict, overrides: dict | None = None) -> dict[str, Space]:
    """The parameters tuned for a method, ``{name: Space}``: its ranker's declared spaces (those
    whose ``tune_when`` hold for ``params``), changed or removed (``None``) by ``overrides``
    (config data, ``{l2: {log_uniform: [1e-6, 1]}}``). TuningError names the first bad entry."""
    cls = ranker_class(kind)
    space = cls.search_space(params)
    for name, data in (overrides or {}).items():
        key = f"tune.space.{name}"
        try:  # a dotted name is a part's setting (solver_params.learning_rate)
            constraints = cls.declaration(name, params).constraints
        except ParamError as exc:
            raise TuningError(key, exc.problem) from None
        if data is None:
            space.pop(name, None)
            continue
        try:
            space[name] = space_from_config(data)
        except ValueError as exc:
            raise TuningError(key, str(exc)) from None
        if problem := space_problem(space[name], constraints):
            raise TuningError(key, problem)
    if not space:
        raise TuningError("tune", f"{kind!r} declares no search space for these settings: give one as tune.space "
                                  f"(e.g. tune: {{space: {{PARAM: {{log_uniform: [1.0e-4, 1.0]}}}}}}) or tune: false")
    return space


def check_tuned_spec(spec: dict) -> None:
    """TuningError naming the key (relative to the method) of a tuned spec's first problem."""
    settings = TuneSettings.from_config(spec["tune"])
    check_settings(settings)
    tuning_space(spec["kind"], spec.get("params") or {}, settings.space)


def base_candidates(kind: str, params: dict, space: dict[str, Space], grid: dict | None = None,
                    selected: dict | None = None) -> list[dict]:
    """What the untuned method would run, in the tuned parameters: the values its default variant
    ``selected`` on this fold (its fit's parameters) when that ran, else each candidate of its
    ``grid`` in order (its params, else the declared defaults, where the grid is silent). They open
    the study, in or outside the space, so the best trial is never below the untuned model on
    validation: with ``selected`` it is the first trial, else the grid's winner is among the first."""
    cls = ranker_class(kind)
    declared = {name: p.default for name, p in cls.parameters.items()}
    out = []
    for candidate in [selected] if selected is not None else grid_candidates(grid):
        values = with_values({**declared, **params}, candidate)
        row = {name: _value_of(cls, values, name) for name in space if name.partition(".")[0] in values}
        if row not in out:  # a grid key the space leaves out (tune.space: {KEY: null}) varies nothing here
            out.append(row)
    return out


def _value_of(cls, values: dict, name: str):
    """A parameter's value in ``values``; a part's setting (``solver_params.learning_rate``) from
    its mapping there, else its declared default."""
    namespace, dot, key = name.partition(".")
    if not dot:
        return values[name]
    part = values.get(namespace) or {}
    return part[key] if key in part else cls.declaration(name, values).default


def study_name(prefix: str, kind: str, params: dict, space: dict[str, Space], settings: TuneSettings,
               metric: str, metric_options: dict, base: list[dict] | None = None) -> str:
    """``prefix`` (the method and fold) and a digest of everything a trial's value depends on, so
    a changed space, sampler, base setting or untuned selection (``base``) is a new study in the
    same storage. The budget is not in it: a larger budget continues the study."""
    what = {"kind": kind, "params": params, "space": {k: s.to_config() for k, s in sorted(space.items())},
            "sampler": settings.sampler, "metric": metric, "options": metric_options, "base": base or []}
    if (pruner := pruner_settings(settings.pruner))["kind"] != "none":  # unpruned studies keep their names
        what["pruner"] = pruner
    if settings.train_fraction < 1:
        what["train_fraction"] = settings.train_fraction
    digest = hashlib.sha256(json.dumps(what, sort_keys=True, default=str).encode()).hexdigest()[:12]
    return f"{prefix}#{digest}"


def _optuna():
    # Optuna (and the SQLAlchemy it loads) only in the jobs that tune
    optuna = importlib.import_module("optuna")
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    return optuna


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _is_lost(trial, now: float) -> bool:
    """A running trial whose worker is gone: its process is dead (this host), or its heartbeat
    is stale (any host)."""
    attrs = trial.user_attrs
    if attrs.get("host") == socket.gethostname() and "pid" in attrs and attrs["pid"] != os.getpid():
        if not _pid_alive(int(attrs["pid"])):
            return True
    return now - float(attrs.get("heartbeat", now)) > STALE_SECONDS


class _Heartbeat:
    """Marks the running trial alive every HEARTBEAT_SECONDS from a daemon thread (on a journal:
    on a database, Optuna's own heartbeat does, tuning_storage.open_storage)."""

    def __init__(self, storage, trial_id: int) -> None:
        self.storage, self.trial_id, self.stop = storage, trial_id, threading.Event()
        self.thread = threading.Thread(target=self._beat, daemon=True, name="tuning-heartbeat")

    def _beat(self) -> None:
        while not self.stop.wait(HEARTBEAT_SECONDS):
            try:
                self.storage.set_trial_user_attr(self.trial_id, "heartbeat", time.time())
            except Exception:  # the trial finished meanwhile, or the storage blinked: next beat
                pass

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop.set()
        self.thread.join()


def _journal_heartbeat(store, study_id: int, trial, journal: bool):
    if not journal:
        return nullcontext()
    trial.set_user_attr("heartbeat", time.time())
    return _Heartbeat(store, store.get_trial_id_from_study_id_trial_number(study_id, trial.number))


@dataclass
class Outcome:
    """What tuning a method on a fold ended with."""

    ranker: object
    params: dict  # the chosen trial's full parameters
    rows: list[dict]  # one per trial, the candidates' table (selection.csv)
    summary: dict  # what the budget bought: trials, CPU-seconds, the best trial, the study


def _values(trial) -> dict:
    return json.loads(trial.user_attrs.get("values", "{}"))


def _lost(trial) -> bool:
    """Ended without a state of ours: found lost by us (``lost``), or by Optuna's heartbeat, or
    failed by an error in its worker."""
    return trial.state.is_finished() and trial.user_attrs.get("state") not in COUNTED


def _counted(trials, budget: int) -> list:
    """The trials the budget counts (complete, diverged or pruned: a pruned trial's CPU-seconds
    count toward the cap as spent), the first ``budget`` by number."""
    done = [t for t in trials if t.user_attrs.get("state") in COUNTED and t.state.is_finished()]
    return sorted(done, key=lambda t: t.number)[:budget]


def _enqueue_base(study, space: dict[str, Space], base: list[dict]) -> None:
    """The untuned method's candidates (:func:`base_candidates`) as the study's first trials, each
    once (another worker may have queued them). A value the space holds goes in as Optuna's fixed
    parameter, so the sampler learns from it; one outside (LightGBM's lambda_l2 0 against a
    log-uniform space, StructRank's l1_bound None) rides in the trial's ``base`` attribute and is
    used as it is (Optuna would warn and clip it, or fail on a log scale)."""
    queued = {t.user_attrs.get("base") for t in study.get_trials(deepcopy=False)}
    for values in base:
        key = json.dumps(values, sort_keys=True)
        if key in queued:
            continue
        fixed = {n: space[n].stored(v) for n, v in values.items() if n in space and space[n].holds(v)}
        study.enqueue_trial(fixed, user_attrs={"base": key})
        queued.add(key)


def _trial_values(trial, space: dict[str, Space]) -> dict:
    """The parameters of a trial: drawn from the space, or a base trial's own values."""
    base = json.loads(trial.user_attrs.get("base", "{}"))
    return {n: s.suggest(trial, n) if n not in base or s.holds(base[n]) else base[n] for n, s in space.items()}


def tuning_subsample(train: RankData, fraction: float, seed: int, name: str) -> RankData:
    """The training queries a study's trials fit on: all of them, or a ``fraction`` drawn once
    per study (the run's seed mixed with the method and fold: every worker draws the same)."""
    if fraction >= 1:
        return train
    rng = np.random.default_rng(sampler_seed(seed, name, -1))
    keep = np.zeros(train.n_queries, dtype=bool)
    keep[rng.choice(train.n_queries, max(1, round(fraction * train.n_queries)), replace=False)] = True
    return train.select_queries(keep)


def sampler_seed(seed: int, name: str, worker: int) -> int:
    """The sampler's seed for one study and worker: the run's seed mixed with the method and fold
    (the study name's prefix), so two folds (or methods) draw different trials."""
    text = f"{seed}/{name.split('#')[0]}/{worker}"
    return int(hashlib.sha256(text.encode()).hexdigest()[:8], 16)


def _mark_lost(study, store, study_id: int, progress: Callable[[str], None]) -> list:
    """Mark the running trials whose worker is gone as lost (failed, not waited for); returns the
    study's trials as they are then."""
    optuna = _optuna()
    if isinstance(store, optuna.storages.RDBStorage):  # Optuna's heartbeat: its stale trials failed
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            optuna.storages.fail_stale_trials(study)
    now, trials = time.time(), study.get_trials(deepcopy=False)
    gone = [t for t in trials if t.state == optuna.trial.TrialState.RUNNING and _is_lost(t, now)]
    for t in gone:
        trial_id = store.get_trial_id_from_study_id_trial_number(study_id, t.number)
        try:
            store.set_trial_user_attr(trial_id, "state", LOST)
            store.set_trial_state_values(trial_id, optuna.trial.TrialState.FAIL)
        except optuna.exceptions.UpdateFinishedTrialError:
            continue  # another worker found it lost first
        progress(lost_line(t))
    return study.get_trials(deepcopy=False) if gone else trials


def _budget_left(study, store, study_id: int, settings: TuneSettings, progress: Callable[[str], None],
                 watch: JournalWatch | None) -> bool:
    """Whether another trial may start: fewer than the budget's trials counted or running (every
    worker's), and the CPU cap, if any, not spent by the counted ones."""
    if watch is not None:
        watch.check()
    trials = _mark_lost(study, store, study_id, progress)
    counted = _counted(trials, settings.trials)
    running = [t for t in trials if t.state == _optuna().trial.TrialState.RUNNING]
    if len(counted) + len(running) >= settings.trials:
        return False
    spent = sum(float(t.user_attrs.get("cpu_seconds", 0.0)) for t in counted)
    if settings.cpu_seconds is not None and spent >= settings.cpu_seconds:
        progress(f"tuning: the CPU budget is spent ({spent:.3g} CPU-s of {settings.cpu_seconds:g}) "
                 f"after {len(counted)} trials")
        return False
    return True


@contextmanager
def _storage_faults(storage: str, watch: JournalWatch | None):
    """Optuna's errors from a damaged or vanished journal, and a full disk under it, said in one
    line naming the journal (a failed write there names no file: the job would name its output)."""
    try:
        yield
    except Exception as exc:
        # study.optimize may hide the error under its own: in Optuna 5.0, when the tell that ends
        # a trial fails (the journal deleted, the disk full) it raises UnboundLocalError, the
        # journal's error (and ours, StorageError, from inside the trial) in its context
        chain = list(_causes(exc))
        ours = next((e for e in chain if isinstance(e, StorageError)), None)
        if ours is not None and ours is not exc:
            raise ours from None
        disk = next((e for e in chain if isinstance(e, OSError)), None)
        if disk is not None:
            if watch is not None:
                watch.check()  # the journal deleted or replaced: said so, not as a missing file
            if watch is not None and disk.filename is None and disk.errno is not None:
                raise OSError(disk.errno, disk.strerror, watch.path) from disk
            if disk is not exc:
                raise disk from None
            raise
        if watch is not None:
            watch.explain(exc)
        raise


def _causes(exc: BaseException | None):
    while exc is not None:
        yield exc
        exc = exc.__cause__ or exc.__context__


def _pruning_listener(trial, curve: list, prune: bool):
    """What a trial's fit reports while it trains (:mod:`rankstudy.util.intermediate`): every
    step kept in ``curve``; with ``prune``, some given to Optuna
    (:class:`rankstudy.selection.pruning.ReportSchedule`) and the fit stopped (Pruned) when the
    study's pruner says so."""

    reported = ReportSchedule()

    def listener(step: int, value: float) -> None:
        curve.append([step, value])
        if prune and reported(step):
            trial.report(value, step)
            if trial.should_prune():
                raise intermediate.Pruned(step)

    return listener


def run_trials(kind: str, params: dict, space: dict[str, Space], train: RankData, vali: RankData, *,
               metric: str, metric_options: dict, settings: TuneSettings, storage: str, name: str,
               worker: int = 0, seed: int = 0, base: list[dict] | None = None,
               progress: Callable[[str], None] = print, notice: Callable[[str], None] | None = None):
    """Run trials of the study ``name`` in this process until the budget is spent (counting
    every worker's trials), the untuned method's candidates ``base`` first (default: its grid's,
    :func:`base_candidates`). ``notice`` also gets what the person at the terminal should see (a
    new study for a changed space). Returns (study, {trial number: Candidate} of this process's
    best, the opened storage)."""
    optuna = _optuna()
    store = open_storage(storage, say=notice or progress)
    watch = JournalWatch(storage) if is_journal(storage) else None
    train = tuning_subsample(train, settings.train_fraction, seed, name)
    with _storage_faults(storage, watch):
        prefix = name.split("#")[0]
        older = [s for s in store.get_all_studies() if s.study_name.split("#")[0] == prefix and s.study_name != name]
        drawn = sampler_seed(seed, name, worker)
        sampler = (optuna.samplers.TPESampler(seed=drawn, n_startup_trials=max(3, min(10, settings.trials // 4)))
                   if settings.sampler == "tpe" else optuna.samplers.RandomSampler(seed=drawn))
        # the pruner sees every worker's intermediate values through the storage
        pruner = pruner_settings(settings.pruner)
        study = optuna.create_study(study_name=name, storage=store, sampler=sampler, direction="maximize",
                                    pruner=make_pruner(pruner), load_if_exists=True)
        study_id = store.get_study_id_from_name(name)
        if older and not study.trials:
            before = len(store.get_all_trials(store.get_study_id_from_name(older[-1].study_name), deepcopy=False))
            (notice or progress)(f"tuning {prefix}: the search space or settings changed since study "
                                 f"{older[-1].study_name} ({before} trials): starting a new study")
        if base is None:
            base = base_candidates(kind, params, space, settings.grid)
        _enqueue_base(study, space, base)
        kept: dict[int, Candidate] = {}
        said_unpruned = False
        prune = pruner["kind"] != "none"

        def objective(trial) -> float:
            nonlocal said_unpruned
            for key, value in (("host", socket.gethostname()), ("pid", os.getpid()), ("worker", worker)):
                trial.set_user_attr(key, value)
            position = len(_counted(study.get_trials(deepcopy=False), settings.trials)) + 1
            values = _trial_values(trial, space)
            trial.set_user_attr("values", json.dumps(values))
            curve: list[list] = []
            with _journal_heartbeat(store, study_id, trial, watch is not None), \
                    intermediate.listened(_pruning_listener(trial, curve, prune)):
                fitted = fit_candidate(kind, with_values(params, values), train, vali, metric, metric_options)
            if watch is not None:
                watch.check()
            # unrounded: the CPU cap sums them (a fit of under half a millisecond rounded to 0 and never
            # spent a cap); selection.csv rounds what it shows
            for key, value in (("seconds", fitted.seconds), ("cpu_seconds", fitted.cpu_seconds),
                               ("state", fitted.state), ("curve", json.dumps(curve))):
                trial.set_user_attr(key, value)
            if prune and not curve and not said_unpruned:
                progress(f"tuning: {kind} reports no validation score while it trains: its trials run unpruned")
                said_unpruned = True
            shown = ", ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in values.items())
            head = f"trial {trial.number + 1} ({position} of {settings.trials}) [{shown}]"
            if fitted.state == COMPLETE and math.isfinite(fitted.value):
                progress(f"{head}: vali {metric} = {fitted.value:.5f} ({fitted.seconds:.1f} s)")
                best = max(kept.values(), key=lambda c: c.value, default=None)
                if best is None or fitted.value > best.value:
                    kept.clear()
                    kept[trial.number] = fitted
                return fitted.value
            if fitted.state == PRUNED:
                progress(f"{head}: {fitted.problem}, vali score there {curve[-1][1]:.5f} ({fitted.seconds:.1f} s)")
                raise optuna.TrialPruned(fitted.problem)
            trial.set_user_attr("problem", fitted.problem[:500] or f"vali {metric} is NaN")
            progress(f"{head}: {fitted.state} ({fitted.problem or f'vali {metric} is NaN'})")
            return math.nan  # Optuna fails a trial whose value is NaN: diverged, counted by its state attribute

        def stop_when_spent(study, _trial) -> None:
            if not _budget_left(study, store, study_id, settings, progress, watch):
                study.stop()

        # Optuna's loop (and, on a database, its heartbeat); the budget is ours, checked before the
        # first trial and after each: MaxTrialsCallback counts every failed trial (lost ones too,
        # where ours counts diverged ones only) and only finished ones (ours counts running trials
        # of other workers, so k workers do not overrun by k - 1 trials), and Optuna has no CPU cap
        if _budget_left(study, store, study_id, settings, progress, watch):
            study.optimize(objective, callbacks=[stop_when_spent])
    return study, kept, store


def settled_trials(study, store, settings: TuneSettings, progress: Callable[[str], None] = print,
                   poll: float = 1.0) -> list:
    """The study's trials once no running trial could still change which are counted: one
    numbered before the last counted trial (or any, while fewer than the budget are counted) is
    waited for, or marked lost when its worker is gone. So the choice does not depend on when it
    is made (two runs sharing a journal chose differently, one taking a running trial as absent)."""
    optuna = _optuna()
    study_id = store.get_study_id_from_name(study.study_name)
    said = set()
    while True:
        trials = _mark_lost(study, store, study_id, progress)
        counted = _counted(trials, settings.trials)
        limit = counted[-1].number if len(counted) >= settings.trials else math.inf
        waiting = [t for t in trials if t.state == optuna.trial.TrialState.RUNNING and t.number < limit]
        if not waiting:
            return trials
        for t in waiting:
            if t.number not in said:
                progress(f"tuning: waiting for trial {t.number + 1} (worker {t.user_attrs.get('worker')}, pid "
                         f"{t.user_attrs.get('pid')} on {t.user_attrs.get('host')}) before choosing")
                said.add(t.number)
        time.sleep(poll)


def tune_and_fit(kind: str, params: dict, space: dict[str, Space], train: RankData, vali: RankData, *,
                 metric: str, metric_options: dict, settings: TuneSettings, storage: str, name: str,
                 seed: int = 0, base: list[dict] | None = None, progress: Callable[[str], None] = print,
                 notice: Callable[[str], None] | None = None, base_value: float | None = None) -> Outcome:
    """Run the study's remaining trials here (none when workers ran them all), then return the
    best counted trial's model: the one fitted here, or fitted again from its parameters (the
    same seed gives the same model; ``summary["refit"]`` says so).

    With ``train_fraction`` below 1 the trials' scores are of models fitted on a subsample, so
    the best trial's model on the whole fold may score below the untuned selection: that is
    kept instead (:func:`at_least_untuned`). ``base_value``: the untuned selection's validation
    score on the whole fold when the caller has it (the default twin's fit); else its
    candidates are fitted on the whole fold to know it."""
    check_settings(settings)
    kept: dict[int, Candidate] = {}
    while True:
        study, ran, store = run_trials(kind, params, space, train, vali, metric=metric, metric_options=metric_options,
                                       settings=settings, storage=storage, name=name, seed=seed, base=base,
                                       progress=progress, notice=notice)
        kept.update(ran)
        running = {t.number for t in study.get_trials(deepcopy=False) if not t.state.is_finished()}
        trials = settled_trials(study, store, settings, progress)
        counted = _counted(trials, settings.trials)
        # a trial the budget counted as running, found lost while the choice waited for it, leaves
        # the budget short: run the trials it left (run_trials stops at once if none is left)
        if len(counted) >= settings.trials or not any(t.number in running and _lost(t) for t in trials):
            break
    complete = [t for t in counted if t.user_attrs.get("state") == COMPLETE and t.value is not None]
    rows = []
    for t in sorted(trials, key=lambda t: t.number):
        state = t.user_attrs.get("state", LOST if t.state.is_finished() else "running")
        fitted = Candidate({}, None, float(t.value) if t.value is not None else float("nan"),
                           float(t.user_attrs.get("seconds", 0.0)), float(t.user_attrs.get("cpu_seconds", 0.0)), state)
        rows.append({**candidate_row(t.number + 1, fitted, _values(t), metric), "worker": t.user_attrs.get("worker"),
                     "counted": t in counted, "untuned": "base" in t.user_attrs,
                     # the validation curve the trial reported while it trained ([[step, score], ...])
                     "curve": t.user_attrs.get("curve", "[]")})
    if not complete:
        message = diverged_message(kind, rows, [t.user_attrs.get("problem", "") for t in counted] or ["no trial"])
        if not counted:
            raise AllDiverged(message)
        # the first trial's model, fitted again, so the fold is saved and reported as not learned
        first = counted[0]
        for row in rows:
            row["selected"] = row["candidate"] == first.number + 1
        params_first = with_values(params, _values(first))
        refit = fit_candidate(kind, params_first, train, vali, metric, metric_options)
        raise AllDiverged(message, refit.ranker, params_first, rows)
    best = max(complete, key=lambda t: (t.value, -t.number))  # ties: the earlier trial
    for row in rows:
        row["selected"] = row["candidate"] == best.number + 1
    chosen = with_values(params, _values(best))
    refit = best.number not in kept or settings.train_fraction < 1
    full_fold = None
    untuned = None
    if settings.train_fraction < 1:  # the trials saw a subsample: the model is fitted on the whole fold
        progress(f"tuning: fitting the best trial ({best.number + 1}) on the whole training split "
                 f"(the trials fit on {settings.train_fraction:g} of its queries)")
        fitted = Kept(best, chosen, fit_candidate(kind, chosen, train, vali, metric, metric_options))
        model, untuned = at_least_untuned(kind, params, fitted, [t for t in counted if "base" in t.user_attrs],
                                          base_value, train, vali, metric, metric_options, progress)
        kept_untuned = model is not fitted
        if kept_untuned:
            best, chosen = model.trial, model.params
            for row in rows:
                row["selected"] = row["candidate"] == best.number + 1
        ranker, full_fold = model.candidate.ranker, model.candidate.value
    elif refit:
        progress(f"tuning: fitting the best trial ({best.number + 1}, run by worker {best.user_attrs.get('worker')}) "
                 f"again")
        fitted = fit_candidate(kind, chosen, train, vali, metric, metric_options)
        if not math.isclose(fitted.value, best.value, rel_tol=1e-9, abs_tol=1e-12):
            progress(f"tuning: the refit scored vali {metric} {fitted.value:.6f}, the trial {best.value:.6f} "
                     f"(the fit is not deterministic across processes)")
        ranker = fitted.ranker
    else:
        ranker = kept[best.number].ranker
    summary = {
        "sampler": settings.sampler, "budget_trials": settings.trials, "budget_cpu_seconds": settings.cpu_seconds,
        "trials": len(counted), "diverged": sum(t.user_attrs.get("state") == DIVERGED for t in counted),
        "lost": sum(_lost(t) for t in trials),
        "cpu_seconds": round(sum(float(t.user_attrs.get("cpu_seconds", 0.0)) for t in counted), 6),
        "best_trial": best.number + 1, "best_value": float(best.value), "refit": refit,
        "workers": sorted({t.user_attrs.get("worker") for t in counted}), "study": name,
        "space": {k: s.to_config() for k, s in space.items()},
        "pruner": pruner_settings(settings.pruner)["kind"],
        "pruned": sum(t.user_attrs.get("state") == PRUNED for t in counted),
        # whether the method reports a validation score while it trains (else a pruner cannot stop it)
        "reports": any(json.loads(t.user_attrs.get("curve", "[]")) for t in counted),
        "train_fraction": settings.train_fraction,
    }
    if full_fold is not None:  # the model's own validation score (the trials' were on a subsample)
        summary["full_fold_value"] = float(full_fold)
        # the untuned selection's score on the whole fold, and whether its model was kept instead
        summary["untuned_full_fold_value"] = None if untuned is None else float(untuned)
        summary["kept_untuned"] = kept_untuned
    return Outcome(ranker, chosen, rows, summary)


@dataclass
class Kept:
    """The model a study keeps: a trial's parameters, fitted on the whole fold."""

    trial: object  # the study's trial (Optuna's FrozenTrial)
    params: dict
    candidate: Candidate


def at_least_untuned(kind: str, params: dict, best: Kept, base_trials: list, base_value: float | None,
                     train: RankData, vali: RankData, metric: str, metric_options: dict,
                     progress: Callable[[str], None]) -> tuple[Kept, float | None]:
    """What a study on a train fraction keeps: the ``best`` trial fitted on the whole fold, or the
    untuned selection where that scores higher on validation, so that tuning on a subsample
    never ends below the untuned method either. The untuned selection's whole-fold score is
    ``base_value`` (the default twin's; its one base trial is fitted again only when it wins: the
    same seed gives the twin's model), else the best of the base trials fitted on the whole fold.
    Returns the model kept and that score (None without base trials)."""
    best_is_base = "base" in best.trial.user_attrs
    others = [t for t in base_trials if t.number != best.trial.number]
    if base_value is not None:
        if best_is_base or _score(best.candidate) >= base_value:
            return best, base_value
        others = others[:1]  # the twin's selection: the one base trial
    if not others:  # no base trial, or the best is the only one
        return best, best.candidate.value if best_is_base else None
    why = (f"whose {base_value:.6f} beats the best trial's {best.candidate.value:.6f}" if base_value is not None
           else "to compare")
    progress(f"tuning: fitting the untuned selection (trial {', '.join(str(t.number + 1) for t in others)}) on "
             f"the whole training split, {why}")
    fits = [Kept(t, p, fit_candidate(kind, p, train, vali, metric, metric_options))
            for t, p in ((t, with_values(params, _values(t))) for t in others)]
    challenger = max(fits, key=lambda k: (_score(k.candidate), -k.trial.number))
    untuned = base_value if base_value is not None else max(
        _score(challenger.candidate), _score(best.candidate) if best_is_base else -math.inf)
    if _score(challenger.candidate) > _score(best.candidate):
        progress(f"tuning: kept the untuned selection (trial {challenger.trial.number + 1}: vali {metric} "
                 f"{challenger.candidate.value:.6f} on the whole fold, the best trial's {best.candidate.value:.6f})")
        return challenger, untuned
    return best, untuned if math.isfinite(untuned) else None


def _score(candidate: Candidate) -> float:
    """A whole-fold fit's validation score, a diverged one below every other."""
    return candidate.value if candidate.state == COMPLETE and math.isfinite(candidate.value) else -math.inf
