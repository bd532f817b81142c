"""The board states its tuning budget and says why a tuned method ran fewer trials than the budget
or spent more than its CPU cap (rankstudy.reporting.budget), from each fold's fit.json summary."""

from __future__ import annotations

import numpy as np
import pandas as pd

from rankstudy.reporting import budget
from rankstudy.reporting import leaderboard as lb

METRIC = "ndcg@10"


def spent(trials: int, cpu: float, budget_trials: int = 20, cap: float | None = 60.0, sampler: str = "tpe",
          lost: int = 0, pruner: str = "none", train_fraction: float = 1.0) -> dict:
    """A fold's fit.json ``tuning`` summary, with keys the board does not read."""
    return {"sampler": sampler, "budget_trials": budget_trials, "budget_cpu_seconds": cap, "trials": trials,
            "cpu_seconds": cpu, "diverged": 0, "lost": lost, "best_trial": 1, "study": "s#1", "space": {},
            "pruner": pruner, "pruned": 0, "reports": True, "train_fraction": train_fraction}


def the_board_folds() -> pd.DataFrame:
    """As the tuned board's tables job reads them (method summaries: folds as JSON keys, strings)."""
    tuning = {
        "lm-tuned": {"1": spent(20, 30.0), "2": spent(20, 41.5)},  # the budget as set
        "cb-tuned": {"1": spent(7, 61.2), "2": spent(6, 63.9)},  # the cap spent; the last trial ran past it
        "sr-tuned": {"1": spent(1, 480.0), "2": spent(1, 510.4)},  # dearer than the cap
        "ca-tuned": {"1": spent(1, 75.0), "2": spent(3, 62.0)},
        "nn-tuned": {"1": spent(20, 64.0)},  # every trial ran, the last past the cap
        "own-tuned": {"1": spent(40, 20.0, budget_trials=40)},  # its own budget (methods.NAME.tune)
        "cut-tuned": {"1": spent(5, 10.0, lost=2)},  # stopped early, the cap not spent
        "grid": {},  # an untuned method: no rows
    }
    return budget.tuning_frame({s: {f: budget.fold_budget(t) for f, t in folds.items()} for s, folds in tuning.items()})


def test_the_folds_tuning_as_rows_from_the_method_summaries(tmp_path):
    frame = the_board_folds()
    assert list(frame.columns) == list(budget.COLUMNS)
    assert frame.loc[frame["system"] == "cb-tuned", ["fold", "trials", "cpu_seconds"]].values.tolist() == [
        [1, 7.0, 61.2], [2, 6.0, 63.9]]
    assert "grid" not in set(frame["system"]) and not set(frame.columns) & {"study", "space", "best_trial"}
    path = budget.write_tuning(frame, tmp_path / "D")
    assert path.name == "D.tuning.csv" and len(pd.read_csv(path)) == len(frame)
    # a study that tunes nothing: the file has its header only
    assert list(pd.read_csv(budget.write_tuning(budget.tuning_frame({"a": {}}), tmp_path / "E")).columns) == list(
        budget.COLUMNS)


def test_why_a_method_ran_fewer_trials_or_more_than_its_cap():
    notes = budget.system_notes(the_board_folds())
    assert "lm-tuned" not in notes and "own-tuned" not in notes  # their budgets as set
    assert notes["cb-tuned"] == ("the CPU cap was spent after 6-7 of 20 trials (folds 1, 2; 61.2-63.9 CPU-s "
                                 "against the cap of 60)")
    assert notes["sr-tuned"] == "a trial dearer than the cap runs once (folds 1, 2; 480.0-510.4 CPU-s against the cap of 60)"
    assert notes["ca-tuned"] == ("a trial dearer than the cap runs once (fold 1; 75.0 CPU-s against the cap of 60); "
                                 "the CPU cap was spent after 3 of 20 trials (fold 2; 62.0 CPU-s against the cap of 60)")
    assert notes["nn-tuned"] == "all 20 trials ran, the last one past the cap (fold 1; 64.0 CPU-s against the cap of 60)"
    assert notes["cut-tuned"] == "5 of 20 trials ran, the cap not spent (fold 1; 10.0 CPU-s against the cap of 60, 2 lost)"


def test_the_budget_sentence_says_sampler_trials_cap_and_pruner():
    frame = the_board_folds()
    sentence = budget.budget_sentence(frame)
    assert sentence.startswith("Tuning budget, per method and fold (tune.trials, tune.cpu_seconds: no trial starts "
                               "once the cap is spent): Optuna's TPE sampler, 20 trials or 60 CPU-s of trials, "
                               "whichever ends first, pruner: none; each trial fitted on the training split")
    assert "Their own budget: own-tuned: Optuna's TPE sampler, 40 trials or 60 CPU-s" in sentence
    # the pruner and the trials' share of the training queries, as each fold's fit.json recorded them
    pruned = budget.tuning_frame({"a-tuned": {1: budget.fold_budget(spent(20, 30.0, pruner="hyperband",
                                                                          train_fraction=0.5))}})
    assert ("20 trials or 60 CPU-s of trials, whichever ends first, pruner: hyperband, trials fitted on 50% of the "
            "training queries (the chosen one then on all)") in budget.budget_sentence(pruned)
    # with its settings where the study gives them as a mapping
    settings = {"pruner": {"kind": "hyperband", "min_resource": 1, "reduction_factor": 3}}
    assert "pruner: hyperband (min_resource 1, reduction_factor 3)" in budget.budget_sentence(pruned, settings)
    # a fit.json from before the pruner: the study's tune block says, else none
    old = budget.tuning_frame({"a-tuned": {1: {k: v for k, v in budget.fold_budget(spent(20, 30.0)).items()
                                               if k not in ("pruner", "pruned", "train_fraction")}}})
    assert "pruner: none;" in budget.budget_sentence(old)
    assert "pruner: median;" in budget.budget_sentence(old, {"pruner": "median"})
    no_cap = budget.tuning_frame({"a-tuned": {1: budget.fold_budget(spent(4, 3.0, budget_trials=4, cap=None,
                                                                          sampler="random"))}})
    assert budget.budget_sentence(no_cap).startswith(
        "Tuning budget, per method and fold (tune.trials): random search (Optuna's random sampler), 4 trials, "
        "pruner: none;")
    assert budget.budget_sentence(budget.tuning_frame({})) == ""


def test_the_board_page_states_the_budget_and_the_notes(tmp_path):
    """Under the caption the budget; under a data set's default-and-tuned table, the notes; in the
    CSV, each tuned row's note."""
    means = {"cb": 0.50, "cb-tuned": 0.52}
    numbers = pd.DataFrame([{"metric": METRIC, "system": s, "mean": v, "std": 0.01, "n_folds": 2, "learned": True}
                            for s, v in means.items()])
    pairs = pd.DataFrame([{"metric": METRIC, "system": "cb", "other": "cb-tuned", "winner": "", "mean_system": 0.5,
                           "mean_other": 0.52, "diff": -0.02, "diff_lo": -0.05, "diff_hi": 0.01, "ci_level": 0.95,
                           "sig_rand": False, "decided_by": "rand"}])
    folds = the_board_folds()
    board = lb.dataset_board(numbers, pairs, None, METRIC)
    gains = lb.tuning_gains(board, pairs, None, METRIC, budget.system_notes(folds))
    lb.write_leaderboard({"D": board}, METRIC, tmp_path / "lb", "cap", alpha=0.05, folds=[1, 2], gains={"D": gains},
                         budget=budget.budget_sentence(folds))
    md = (tmp_path / "lb.md").read_text()
    assert md.index("cap\n") < md.index("Tuning budget, per method and fold (tune.trials, tune.cpu\\_seconds: no "
                                         "trial starts once the cap is spent): Optuna's TPE sampler, 20 trials or 60") \
        < md.index("## Across data sets")
    assert ("Fewer trials than the budget, or more CPU-seconds than the cap (no trial starts once the cap is spent, "
            "but the one running then finishes): cb-tuned: the CPU cap was spent after 6-7") in md
    assert "Tuning budget" in (tmp_path / "lb.html").read_text()
    csv = pd.read_csv(tmp_path / "lb.csv").set_index("system")
    assert csv.loc["cb-tuned", "tuning_note"].startswith("the CPU cap was spent after 6-7 of 20 trials")
    assert np.isnan(csv.loc["cb", "gain"])
