"""Tuning through the real Snakemake CLI: two workers on one machine share one method's Optuna
study (a journal file), the train job fits the best trial, a rerun finds nothing to do, and a
larger budget resumes the study instead of starting again."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pandas as pd
import pytest
import yaml

from pipeline_runs import make_workdir, run_dir, snakemake
from tuningcheck import TUNED

pytest.importorskip("optuna")


def fit_target(method: str = "lambdamart") -> str:
    return str(run_dir(Path("."), method, 1, study="tuned") / "fit.json")


def test_two_workers_share_a_study_and_a_larger_budget_resumes_it(tmp_path):
    workdir = make_workdir(tmp_path, TUNED)
    snakemake(workdir, fit_target())
    fold = run_dir(workdir, "lambdamart", 1, study="tuned")
    workers = [json.loads((fold / "tuning" / f"worker{k}.json").read_text()) for k in (1, 2)]
    ran = [set(w["trials"]) for w in workers]
    assert not ran[0] & ran[1] and len(ran[0] | ran[1]) >= 6
    assert all(ran), f"both workers ran trials at once: {ran}"
    fit = json.loads((fold / "fit.json").read_text())
    assert fit["tuning"]["trials"] == 6 and fit["tuning"]["workers"] == [1, 2]
    assert fit["tuning"]["study"].startswith("tuned/synthetic/first/lambdamart/fold1#")
    rows = (fold / "selection.csv").read_text().splitlines()
    assert rows[0].split(",")[-6:] == ["state", "worker", "counted", "untuned", "curve", "selected"]
    assert sum(r.endswith(",True") for r in rows[1:]) == 1
    assert (workdir / "results/tuning/tuned/synthetic/first/lambdamart/fold1.journal").exists()

    assert "Nothing to be done" in snakemake(workdir, fit_target(), "-n").stdout
    # a larger budget continues the study: only the two new trials run
    (workdir / "test.yaml").write_text((workdir / "test.yaml").read_text().replace("trials: 6", "trials: 8"))
    snakemake(workdir, fit_target())
    fit = json.loads((fold / "fit.json").read_text())
    again = [json.loads((fold / "tuning" / f"worker{k}.json").read_text()) for k in (1, 2)]
    # each worker's record keeps every trial it ran, the first run's too; only 7 and 8 are new
    first_pids = {r["pid"] for w in workers for r in w["ran"]}
    assert sorted(again[0]["trials"] + again[1]["trials"]) == list(range(1, 9))
    assert sorted(r["trial"] for w in again for r in w["ran"] if r["pid"] not in first_pids) == [7, 8]
    assert fit["tuning"]["trials"] == 8


def test_a_tuned_twin_opens_with_what_its_default_twin_selected_on_the_fold(tmp_path):
    """variants [default, tuned]: the tuned job waits for its twin's fit, its first trial is the
    twin's grid winner on that fold, scored as the twin scored it, and it ends no lower."""
    config = {**TUNED, "folds": [1, 2],
              "methods": {"ranknet": {"kind": "linear", "params": {"loss": "ranknet"},
                                      "grid": {"l2": [1.0e-4, 1.0e-2, 1.0e+2]}}},
              "tune": {"trials": 3, "sampler": "random", "variants": ["default", "tuned"]},
              "report": {**TUNED["report"], "baseline": "ranknet"}}
    workdir = make_workdir(tmp_path, config)
    snakemake(workdir, *(str(run_dir(Path("."), "ranknet-tuned", k, study="tuned") / "fit.json") for k in (1, 2)))
    drawn = []
    for fold in (1, 2):
        default = json.loads((run_dir(workdir, "ranknet", fold, study="tuned") / "fit.json").read_text())
        tuned_dir = run_dir(workdir, "ranknet-tuned", fold, study="tuned")
        tuned = json.loads((tuned_dir / "fit.json").read_text())
        rows = pd.read_csv(tuned_dir / "selection.csv")
        assert rows["untuned"].tolist() == [True, False, False]
        assert rows.loc[0, "param.l2"] == default["params"]["l2"]
        assert rows.loc[0, "vali.ndcg@10"] == default["selection_score"]
        assert tuned["selection_score"] >= default["selection_score"]
        drawn.append(rows["param.l2"].tolist()[1:])
    assert drawn[0] != drawn[1]  # each fold draws its own trials
    # trials on half the training queries: the twin's score, read from its fit.json, is the floor of
    # the model kept (fitted on all of them), and the twins' own fits stay as they are
    before = {k: json.loads((run_dir(workdir, "ranknet", k, study="tuned") / "fit.json").read_text()) for k in (1, 2)}
    snakemake(workdir, *(str(run_dir(Path("."), "ranknet-tuned", k, study="tuned") / "fit.json") for k in (1, 2)),
              "--config", "tune={train_fraction: 0.5}")
    for fold in (1, 2):
        default = json.loads((run_dir(workdir, "ranknet", fold, study="tuned") / "fit.json").read_text())
        tuned = json.loads((run_dir(workdir, "ranknet-tuned", fold, study="tuned") / "fit.json").read_text())
        assert default["uid"] == before[fold]["uid"]
        assert tuned["tuning"]["train_fraction"] == 0.5
        assert tuned["tuning"]["untuned_full_fold_value"] == default["selection_score"]
        assert tuned["selection_score"] == tuned["tuning"]["full_fold_value"] >= default["selection_score"]


def test_the_tuned_board_states_its_budget_and_why_a_method_ran_one_trial(tmp_path):
    """Default and tuned twins up to the leaderboard: each fold's fit.json budget reaches the board
    through the method summary and the tables' tuning.csv; at a cap of 1 ms every tuned method runs
    its first trial only, and the page says so; the gain is tuned - default of the pair's pooled means."""
    from rankstudy.pipeline import layout

    config = {**TUNED, "folds": [1],
              "methods": {name: {"kind": "linear", "params": {"loss": name, "max_iter": 30}, "grid": {"l2": [1.0e-2]}}
                          for name in ("ranknet", "listnet")},
              "tune": {"trials": 3, "cpu_seconds": 0.001, "sampler": "random", "variants": ["default", "tuned"]},
              "report": {**TUNED["report"], "baseline": "ranknet", "compare": "all_pairs",
                         "leaderboard": {"metric": "ndcg@10"}}}
    workdir = make_workdir(tmp_path, config)
    board = layout.fill(layout.LEADERBOARD, study="tuned")
    snakemake(workdir, board + ".md")
    folds = pd.read_csv(workdir / (layout.fill(layout.TABLES, study="tuned", dataset="synthetic") + ".tuning.csv"))
    assert sorted(folds["system"]) == ["listnet-tuned [first]", "ranknet-tuned [first]"]
    assert (folds["trials"] == 1).all() and (folds["budget_trials"] == 3).all()
    assert (folds["budget_cpu_seconds"] == 0.001).all() and (folds["cpu_seconds"] > 0.001).all()
    # what tuning did is tuning.* (as fit.json names it); tune.* is what the config set
    params = pd.read_csv(workdir / (layout.fill(layout.TABLES, study="tuned", dataset="synthetic") + ".params.csv"))
    assert {"tuning.trials", "tuning.cpu_seconds", "tuning.best_trial"} <= set(params.columns)
    assert not any(column.startswith("tune.") for column in params.columns)
    md = (workdir / (board + ".md")).read_text()
    assert ("random search (Optuna's random sampler), 3 trials or 0.001 CPU-s of trials, whichever ends first, "
            "pruner: none;") in md
    assert "ranknet-tuned [first]: a trial dearer than the cap runs once (fold 1; " in md
    csv = pd.read_csv(workdir / (board + ".csv")).set_index("system")
    tuned = csv.loc["ranknet-tuned [first]"]
    assert tuned["gain"] == tuned["pooled_tuned"] - tuned["pooled_default"]
    assert tuned["tuning_note"].startswith("a trial dearer than the cap runs once (fold 1; ")


def test_a_bad_tuning_space_is_refused_before_any_job_naming_its_key(tmp_path):
    """The Snakemake CLI's own refusal (the budget and sampler keys: tests/test_tuning_config.py)."""
    from pipeline_runs import SNAKEMAKE

    workdir = make_workdir(tmp_path, TUNED)
    config = yaml.safe_load((workdir / "test.yaml").read_text())
    config["methods"]["lambdamart"]["tune"] = {"space": {"num_leaves": {"int": [1, 8]}}}
    (workdir / "bad.yaml").write_text(yaml.safe_dump(config))
    out = subprocess.run([SNAKEMAKE, "-n", "--configfile", "bad.yaml", "--replace-workflow-config"], cwd=workdir,
                         capture_output=True, text=True)
    assert out.returncode != 0
    assert ("config key methods.lambdamart.tune.space.num_leaves: search space an integer in [1, 8] leaves the "
            "parameter's range: 1 is not an integer >= 2") in out.stdout + out.stderr
    assert not (workdir / "results").exists()


def _job_pids(workdir: Path, script: str) -> list[int]:
    """The processes of ``script``'s jobs running in ``workdir`` (from /proc)."""
    pids = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            argv = (proc / "cmdline").read_bytes().split(b"\0")
            cwd = os.readlink(proc / "cwd")
        except OSError:
            continue
        if any(a.endswith(script.encode()) for a in argv[:3]) and Path(cwd) == workdir:
            pids.append(int(proc.name))
    return pids


def test_a_killed_snakemake_takes_its_tuning_workers_with_it_and_a_rerun_keeps_their_logs(tmp_path):
    """kill -9 of Snakemake orphaned the tune_trials workers, which went on beside the rerun's two
    (4 on one study), and the rerun truncated their logs (issue 45)."""
    workdir = make_workdir(tmp_path, {**TUNED, "tune": {**TUNED["tune"], "trials": 500}})
    from pipeline_runs import SNAKEMAKE

    proc = subprocess.Popen([SNAKEMAKE, fit_target(), "--cores", "2", "--configfile", "test.yaml"], cwd=workdir,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    logs = lambda: sorted(workdir.glob("results/logs/tune_trials/**/worker?.log"))  # noqa: E731
    deadline = time.monotonic() + 300
    while not (len(logs()) == 2 and all("vali ndcg@10" in p.read_text() for p in logs())):
        assert time.monotonic() < deadline and proc.poll() is None, "the workers never started a trial"
        time.sleep(0.5)
    assert len(_job_pids(workdir, "tune_trials.py")) == 2
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    deadline = time.monotonic() + 20
    while _job_pids(workdir, "tune_trials.py"):
        assert time.monotonic() < deadline, "the workers outlived their Snakemake"
        time.sleep(0.5)
    every = [p.with_name(p.stem + ".attempts.log") for p in logs()]
    first = {p: p.read_text() for p in every}
    assert all("is gone: the job stops" in text for text in first.values())
    # the rerun: the killed workers' running trials are lost; Snakemake replaces a job's log, and
    # the log of every attempt goes on
    (workdir / "test.yaml").write_text((workdir / "test.yaml").read_text().replace("trials: 500", "trials: 4"))
    snakemake(workdir, "--unlock")  # as `bootstrap.py run` does when no Snakemake runs here
    snakemake(workdir, fit_target(), "--rerun-incomplete")
    for path, before in first.items():
        text = path.read_text()
        assert text.startswith(before) and text.count("[tune_trials] attempt at") == 2
    fit = json.loads((run_dir(workdir, "lambdamart", 1, study="tuned") / "fit.json").read_text())
    assert fit["tuning"]["trials"] == 4 and fit["tuning"]["lost"] >= 1


def test_a_null_cap_on_the_command_line_is_taken(tmp_path):
    """The Snakemake CLI's --config reading: `tune={trials: 3, cpu_seconds: null}` was refused."""
    workdir = make_workdir(tmp_path, TUNED)
    out = snakemake(workdir, fit_target(), "-n", "--config", "tune={trials: 3, cpu_seconds: null, workers: 1}")
    assert "tune_trials" not in out.stdout and "train" in out.stdout
