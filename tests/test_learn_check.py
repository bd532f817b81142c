"""`python -m rankstudy learn-check`, the "did it learn on real data" tool, run as a user runs it."""

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def test_learn_check_trains_one_method_of_a_study_and_prints_it_beside_random(mq2008_dir, tmp_path):
    out = subprocess.run(
        [sys.executable, "-m", "rankstudy", "learn-check", str(REPO / "config/studies/neural-letor.yaml"),
         "listnet", "--data", str(mq2008_dir), "--fold", "1", "--cache", str(tmp_path)],
        capture_output=True, text=True, cwd=REPO)
    assert out.returncode == 0, out.stderr[-3000:]
    # the selection table (a row per grid candidate: listnet's three l2 values), then the results as JSON
    table = out.stdout[:out.stdout.index("[\n")].splitlines()
    header = next(i for i, line in enumerate(table) if line.split()[:2] == ["candidate", "param.l2"])
    assert len(table[header + 1:]) == 3 and "selected" in table[header]
    results = json.loads(out.stdout[out.stdout.index("[\n"):])
    ours = next(r for r in results if r["method"] == "listnet")
    random_test = next(r["test"] for r in results if r["method"] == "random" and "test" in r)
    assert ours["objective"]["final"] < ours["objective"]["start"]
    assert ours["test"]["ndcg@10"] > random_test["ndcg@10"] + 0.1


def test_a_data_folder_without_the_fold_is_one_line_naming_what_was_looked_for(tmp_path):
    """OHSUMED's folds sit one folder down (Feature-min/Fold1): --data one level too high said
    StopIteration with a traceback."""
    (tmp_path / "OHSUMED" / "Feature-min" / "Fold1").mkdir(parents=True)
    out = subprocess.run(
        [sys.executable, "-m", "rankstudy", "learn-check", str(REPO / "config/studies/neural-letor.yaml"),
         "listnet", "--data", str(tmp_path / "OHSUMED"), "--fold", "1", "--cache", str(tmp_path / "cache")],
        capture_output=True, text=True, cwd=REPO)
    assert out.returncode != 0 and "Traceback" not in out.stderr
    assert out.stderr.strip() == (f"learn-check: no train split of fold 1 under --data {tmp_path / 'OHSUMED'} "
                                  f"(looked for {tmp_path / 'OHSUMED' / 'Fold1' / 'train.txt.gz'} and train.txt); "
                                  f"folds found there: Feature-min/Fold1")


def test_a_bad_set_or_method_is_one_line_before_any_data_is_read(tmp_path):
    """--set values are checked as the config check checks a method (they were a traceback from
    the ranker's constructor); the data folder does not exist: nothing was read."""
    def run(*args):
        out = subprocess.run([sys.executable, "-m", "rankstudy", "learn-check", str(REPO / "config/studies/leaderboard.yaml"),
                              *args, "--data", str(tmp_path / "none"), "--cache", str(tmp_path / "cache")],
                             capture_output=True, text=True, cwd=REPO)
        assert out.returncode != 0 and "Traceback" not in out.stderr, out.stderr[-2000:]
        return out.stderr.strip()

    assert run("dorm", "--set", "loss_params={k: null, cut: 30}") == (
        "learn-check: method 'dorm' with --set loss_params: params.loss_params.k: must be an integer >= 1, got None")
    assert run("dorm", "--set", "C=-1") == "learn-check: method 'dorm' with --set C: params.C: must be a number > 0, got -1"
    assert run("dorm", "--set", "C").startswith("learn-check: --set 'C': expected key=value")
    assert run("dorn").startswith("learn-check: no method 'dorn' in ")
    assert run("ranksvm", "--reference", "svm_nope").startswith("learn-check: no method 'svm_nope' in ")
    assert not (tmp_path / "cache").exists()
