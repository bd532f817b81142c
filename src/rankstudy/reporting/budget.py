"""What a tuning budget bought on each fold, and the board's words for it: the budget (sampler,
trials, CPU cap, pruner), and why a tuned method ran fewer trials than the budget or spent more
CPU-seconds than the cap.

The numbers are each fold's ``fit.json`` ``tuning`` summary (:mod:`rankstudy.selection.tuning`):
the budget it ran with (``sampler``, ``budget_trials``, ``budget_cpu_seconds``, ``pruner``,
``train_fraction``) and what it spent (``trials`` counted: complete, diverged or pruned; their
``cpu_seconds``; ``diverged``, ``pruned``, ``lost``). A summary from before the pruner has none.
Tuning stops when the trials are run or when the counted trials' CPU-seconds reach the cap; no
trial starts after that, and the one running when the cap is reached finishes, so a fold can end
above the cap, and a trial dearer than the cap is the only one.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pandas as pd

from rankstudy.util import atomic

# what the tables job keeps of each fold's tuning summary, one row per (system, fold)
FOLD_KEYS = ("sampler", "budget_trials", "budget_cpu_seconds", "pruner", "train_fraction", "trials", "cpu_seconds",
             "diverged", "pruned", "lost")
BUDGET_KEYS = ("sampler", "budget_trials", "budget_cpu_seconds", "pruner", "train_fraction")  # one method's budget
COLUMNS = ("system", "fold", *FOLD_KEYS)
SAMPLERS = {"tpe": "Optuna's TPE sampler", "random": "random search (Optuna's random sampler)"}


def fold_budget(tuning: Mapping | None) -> dict:
    """The :data:`FOLD_KEYS` of one fold's ``fit.json`` tuning summary ({} for a grid)."""
    return {k: tuning.get(k) for k in FOLD_KEYS} if tuning else {}


def tuning_frame(tuning: Mapping[str, Mapping]) -> pd.DataFrame:
    """{system: {fold: :func:`fold_budget`}} (the method summaries' ``tuning``; folds may be
    JSON's strings) as rows in :data:`COLUMNS`; no row for an untuned system."""
    rows = [{"system": system, "fold": int(fold), **{k: spent.get(k) for k in FOLD_KEYS}}
            for system, folds in tuning.items() for fold, spent in sorted(folds.items(), key=lambda kv: int(kv[0]))
            if spent]
    frame = pd.DataFrame(rows, columns=list(COLUMNS))
    for column in ("budget_trials", "budget_cpu_seconds", "train_fraction", "trials", "cpu_seconds", "diverged",
                   "pruned", "lost"):
        frame[column] = pd.to_numeric(frame[column], errors="coerce").astype(float)
    return frame


def write_tuning(frame: pd.DataFrame, out_prefix: Path) -> Path:
    """``out_prefix.tuning.csv`` (a header only when nothing is tuned)."""
    out_prefix = Path(out_prefix)
    return atomic.write_csv(frame, out_prefix.with_name(out_prefix.name + ".tuning.csv"))


def _range(values, fmt: str = "{:g}") -> str:
    low, high = float(np.min(values)), float(np.max(values))
    return fmt.format(low) if fmt.format(low) == fmt.format(high) else f"{fmt.format(low)}-{fmt.format(high)}"


def _folds(folds) -> str:
    folds = sorted(int(f) for f in folds)
    return f"fold {folds[0]}" if len(folds) == 1 else "folds " + ", ".join(map(str, folds))


def fold_reasons(frame: pd.DataFrame) -> pd.Series:
    """Per row (fold): ``cap`` (the CPU cap was spent before the trials), ``once`` (so after one
    trial: a trial dearer than the cap), ``short`` (fewer trials, the cap not spent: an interrupted
    study, lost trials), ``over`` (every trial ran, the last past the cap) or '' (the budget as set)."""
    cap = frame["budget_cpu_seconds"].astype(float)
    capped = cap.notna()
    full = frame["trials"] >= frame["budget_trials"]
    spent = capped & (frame["cpu_seconds"] >= cap)
    over = capped & (frame["cpu_seconds"] > cap)
    reason = np.select([full & over, full, spent & (frame["trials"] == 1), spent], ["over", "", "once", "cap"], "short")
    return pd.Series(reason, index=frame.index)


def system_notes(frame: pd.DataFrame) -> dict[str, str]:
    """Per tuned system that ran fewer trials than its budget, or spent more than its CPU cap, on
    some fold: why, in the board's words, with the folds, trials and CPU-seconds (against the cap)."""
    if frame.empty:
        return {}
    frame = frame.assign(reason=fold_reasons(frame))
    notes = {}
    for system, part in frame.groupby("system", sort=False):  # a few dozen systems
        said = []
        for reason, rows in part[part["reason"] != ""].groupby("reason", sort=False):
            budget = _range(rows["budget_trials"])
            spent = f"{_range(rows['cpu_seconds'], '{:.1f}')} CPU-s"
            if rows["budget_cpu_seconds"].notna().all():
                spent += f" against the cap of {_range(rows['budget_cpu_seconds'])}"
            if reason == "short":
                spent += f", {int(rows['lost'].sum())} lost"
            where = f"({_folds(rows['fold'])}; {spent})"
            said.append({"cap": f"the CPU cap was spent after {_range(rows['trials'])} of {budget} trials {where}",
                         "once": f"a trial dearer than the cap runs once {where}",
                         "over": f"all {budget} trials ran, the last one past the cap {where}",
                         "short": f"{_range(rows['trials'])} of {budget} trials ran, the cap not spent {where}"}[reason])
        if said:
            notes[str(system)] = "; ".join(said)
    return notes


def _pruner_text(kind: str | None, tune: Mapping | None) -> str:
    """The pruner a fold ran with (its fit.json's kind; the study's ``tune.pruner`` for a record
    from before the pruner), with the study's settings for it where it gives them as a mapping."""
    given = (tune or {}).get("pruner")
    if kind is None:
        kind = given.get("kind", "none") if isinstance(given, Mapping) else (given or "none")
    if isinstance(given, Mapping) and given.get("kind") == kind and len(given) > 1:
        return f"{kind} ({', '.join(f'{k} {v}' for k, v in given.items() if k != 'kind')})"
    return str(kind)


def budget_text(trials: float, cpu_seconds: float, sampler: str, pruner: str = "none",
                train_fraction: float = 1.0) -> str:
    cap = "" if np.isnan(cpu_seconds) else f" or {cpu_seconds:g} CPU-s of trials, whichever ends first"
    fraction = "" if np.isnan(train_fraction) or train_fraction >= 1 else (
        f", trials fitted on {train_fraction:.0%} of the training queries (the chosen one then on all)")
    return f"{SAMPLERS.get(sampler, sampler)}, {trials:g} trials{cap}, pruner: {pruner}{fraction}"


def budget_sentence(frame: pd.DataFrame, tune: Mapping | None = None) -> str:
    """The board's budget in one sentence, from the folds' records (the budget most tuned systems
    ran with, and any system's own): sampler, trials, CPU cap, pruner (none unless the study names
    one; ``tune``: the study's tune block, for a pruner's settings and records from before the
    pruner) and the trials' share of the training queries where it is below 1. '' when nothing
    was tuned."""
    if frame.empty:
        return ""
    budgets = frame[list(BUDGET_KEYS)].astype(object)
    budgets = budgets.where(budgets.notna(), None)
    keys = [tuple(row) for row in budgets.itertuples(index=False)]
    common = max(set(keys), key=keys.count)

    def text(key):
        sampler, trials, cap, pruner, fraction = key
        return budget_text(float(trials), np.nan if cap is None else float(cap), str(sampler),
                           _pruner_text(pruner, tune), 1.0 if fraction is None else float(fraction))

    said = "tune.trials" if common[2] is None else "tune.trials, tune.cpu_seconds: no trial starts once the cap is spent"
    sentence = (f"Tuning budget, per method and fold ({said}): {text(common)}; each trial fitted on the training "
                f"split and scored on the validation split.")
    own = {}
    for system, key in zip(frame["system"], keys):
        if key != common:
            own.setdefault(text(key), []).append(system)
    if own:
        sentence += " Their own budget: " + "; ".join(
            f"{', '.join(dict.fromkeys(systems))}: {budget}" for budget, systems in own.items()) + "."
    return sentence
