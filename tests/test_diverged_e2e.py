"""Numbers that go wrong, through the Snakemake CLI (issue 39): a grid candidate whose learning
rate makes the scores NaN is marked diverged and left out, the fold keeps its good candidate; a
method whose every candidate diverges is a fold "not learned", one line on the console naming
the parameter, no traceback, and the study's tables are still made."""

from __future__ import annotations

import json

import pandas as pd

from pipeline_runs import NO_MLFLOW, make_workdir, run_dir, snakemake

NEURAL = {"epochs": 2, "hidden": [4], "batch_size": 16}
CONFIG = {
    "study": "diverge", "folds": [1],
    "synthetic": {"n_queries": 60, "n_features": 20},
    "features": {"normalization": "zscore", "first_order": True, "rho": []},
    "methods": {"mlp": {"kind": "neural", "params": NEURAL, "grid": {"learning_rate": [1.0e300, 1.0e-3]}},
                "bad": {"kind": "neural", "params": {**NEURAL, "learning_rate": 1.0e300}}},
    "report": {"baseline": "mlp", "metrics": ["ndcg@10"], "n_resamples": 100, "alpha": 0.05},
}


def test_diverged_candidates_are_left_out_and_an_all_diverged_fold_is_not_learned(tmp_path):
    workdir = make_workdir(tmp_path, CONFIG)
    out = snakemake(workdir, *NO_MLFLOW)  # what it checks is in the fold files and tables
    good = run_dir(workdir, "mlp", 1, study="diverge")
    rows = pd.read_csv(good / "selection.csv")
    assert list(rows["state"]) == ["diverged", "complete"] and list(rows["selected"]) == [False, True]
    # a two-epoch net on 60 queries need not learn; it is not counted as diverged
    assert not any("diverged" in p for p in json.loads((good / "summary.json").read_text())["learned"]["problems"])
    bad = run_dir(workdir, "bad", 1, study="diverge")
    assert "every candidate of this neural fold diverged" in json.loads((bad / "fit.json").read_text())["diverged"]
    verdict = json.loads((bad / "summary.json").read_text())["learned"]
    assert not verdict["learned"] and "diverged" in verdict["problems"][0]
    console = out.stdout + out.stderr
    assert "Traceback" not in console
    assert sum("rankstudy train: bad [first] synthetic fold 1: every candidate" in line
               for line in console.splitlines()) == 1
    params = (workdir / "results/tables/diverge/synthetic.params.md").read_text()
    assert "diverged" in params  # the column of how many candidates diverged
    assert "⚠" in (workdir / "results/tables/diverge/synthetic.md").read_text()
