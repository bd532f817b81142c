"""The board-cost benchmark's arithmetic on made-up timings: the exponent of t = a n^b, the fit
predicted at full size, the default job (grid candidates), the tuned job (trials, as dear as the
drawn trials), a method stopped at the cap as a lower bound, and the board on 2 cores and on N
nodes (the longest job bounds it). The benchmark tabulates the made-up fits in a child process,
as a user runs it with --report-only. The caps on a fit (its CPU-seconds, a wall guard) and the
rule that skips a size have no command of their own: those tests load the benchmark's file and
watch stand-in children that sleep or spin, as a fit does in the child the benchmark starts."""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pandas as pd
import pytest

REPO = Path(__file__).resolve().parents[1]
FULL = 2_270_000
DOCS = {16: 100_000, 8: 200_000, 4: 400_000}


def fit(k: int, method: str, candidate: str, cpu_s: float | None, reference: bool, status: str = "ok",
        shape: str = "mslr30k") -> dict:
    rec = {"shape": shape, "k": k, "method": method, "kind": "x", "candidate": candidate, "reference": reference,
           "params": {}, "train_docs": DOCS[k], "status": status}
    if status == "ok":
        rec.update(cpu_s=cpu_s, wall_s=cpu_s, rss_growth_mb=DOCS[k] / 1000, vali_ndcg10=0.5)
    elif status == "capped":
        rec.update(wall_s=600.0, problem="stopped")
    else:
        rec.update(problem="skipped")
    return rec


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    fits = [
        # ranknet grows as n^1.5; its other grid candidates cost 5 and 15 CPU-s beside its 10 at 1/16
        *(fit(k, "ranknet", "grid1", 10 * (DOCS[k] / DOCS[16]) ** 1.5, True) for k in DOCS),
        fit(16, "ranknet", "grid0", 5, False), fit(16, "ranknet", "grid2", 15, False),
        # lambdamart grows linearly; two trials drawn from its space cost 60 and 90 beside its 50
        *(fit(k, "lambdamart", "grid0", 50 * DOCS[k] / DOCS[16], True) for k in DOCS),
        fit(16, "lambdamart", "draw1", 60, False), fit(16, "lambdamart", "draw2", 90, False),
        # structrank is stopped at the cap at 1/16 and not run at the larger sizes
        fit(16, "structrank", "grid0", None, True, "capped"),
        fit(8, "structrank", "grid0", None, True, "skipped"), fit(4, "structrank", "grid0", None, True, "skipped"),
        # one Yahoo-shaped size of ranknet's reference candidate only
        fit(16, "ranknet", "grid1", 20, True, shape="yahoo"),
    ]
    (tmp_path / "fits.jsonl").write_text("".join(json.dumps(f) + "\n" for f in fits))
    for shape, k in [("mslr30k", 16), ("mslr30k", 8), ("mslr30k", 4), ("yahoo", 16)]:
        folder = tmp_path / "data" / f"{shape}-1of{k}"
        folder.mkdir(parents=True)
        n = DOCS[k]
        (folder / "meta.json").write_text(json.dumps({"train_queries": n // 120, "train_docs": n, "vali_docs": n // 3}))
    return tmp_path


def report(workdir: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(REPO / "benchmarks" / "bench_board_cost.py"), "--report-only",
                           "--workdir", str(workdir), "--methods", "ranknet", "lambdamart", "structrank", *args],
                          capture_output=True, text=True, timeout=120)


def test_report_fits_the_power_law_and_predicts_the_board(workdir: Path):
    out = report(workdir, "--trial-draws", "2", "--nodes", "1", "4")
    assert out.returncode == 0, out.stderr[-3000:]
    rows = pd.read_csv(workdir / "board-cost.csv").set_index("method")
    ranknet, lambdamart, structrank = rows.loc["ranknet"], rows.loc["lambdamart"], rows.loc["structrank"]
    scale = FULL / DOCS[16]
    assert ranknet["b"] == pytest.approx(1.5)
    assert ranknet["fit_s"] == pytest.approx(10 * scale ** 1.5)
    assert ranknet["default_job_s"] == pytest.approx(3 * 10 * scale ** 1.5)  # (5 + 10 + 15) / 10 = 3 fits' worth
    assert ranknet["tuned_job_s"] == pytest.approx(20 * 10 * scale ** 1.5)  # no draws: a trial as dear as the fit
    assert lambdamart["b"] == pytest.approx(1.0)
    assert lambdamart["tuned_job_s"] == pytest.approx(20 * 50 * scale * (50 + 60 + 90) / 3 / 50)
    # over the cap at the smallest size: at least the cap, grown as its cost grows (StructRank's
    # kernel: quadratically, bench_board_cost.FLOOR_EXPONENT), and said to be a bound
    stopped = 600 * scale ** 2
    assert structrank["fit_s"] == pytest.approx(stopped) and bool(structrank["lower_bound"])
    assert not bool(ranknet["lower_bound"])
    # default board: 5 folds of each job; on 2 cores half their sum, on 4 nodes the longest job
    jobs = 5 * (3 * 10 * scale ** 1.5 + 50 * scale + stopped)
    row = re.search(r"^\| default \(one fit per grid candidate\) \| >([\d.,]+) \| >([\d.,]+) \| ([\d.,]+) h \(structrank\)",
                    out.stdout, re.M)
    assert row, out.stdout
    assert float(row[1].replace(",", "")) == pytest.approx(jobs / 2 / 3600, abs=0.5)  # hours, as printed
    assert float(row[2].replace(",", "")) == pytest.approx(stopped / 3600, abs=0.5)
    assert float(row[3]) == pytest.approx(stopped / 3600, abs=0.5)
    assert re.search(r"^\| structrank \| >600 \(stopped\) \| skipped \| skipped \| - \|", out.stdout, re.M), out.stdout
    # at the study's budget (tuned.yaml: 20 trials or 60 CPU-s) a trial dearer than the cap runs alone
    assert ranknet["capped_trials"] == 1 and ranknet["capped_job_s"] == pytest.approx(10 * scale ** 1.5)
    assert "tuned at the study's budget (20 trials or 60 CPU-s: 3 of 3 methods one trial)" in out.stdout


def test_a_method_with_nothing_to_draw_has_no_tuned_job_and_is_named(workdir: Path):
    """RankBoost declares no search space: a tuned board runs it once (its default job only)."""
    with open(workdir / "fits.jsonl", "a") as f:
        for k in DOCS:
            f.write(json.dumps(fit(k, "rankboost", "grid0", 30 * DOCS[k] / DOCS[16], True)) + "\n")
    out = subprocess.run([sys.executable, str(REPO / "benchmarks" / "bench_board_cost.py"), "--report-only",
                          "--workdir", str(workdir), "--methods", "ranknet", "rankboost"],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-3000:]
    rows = pd.read_csv(workdir / "board-cost.csv").set_index("method")
    assert rows.loc["rankboost", "default_job_s"] == pytest.approx(30 * FULL / DOCS[16])
    assert rows.loc["rankboost", "tuned_job_s"] == 0 and rows.loc["rankboost", "capped_trials"] == 0
    assert rows.loc["ranknet", "tuned_job_s"] > 0
    assert "No tuned job (nothing to draw: the tuned board runs them once, as their default): rankboost." in out.stdout


def test_a_cpu_cap_above_the_trials_keeps_every_trial(workdir: Path):
    out = report(workdir, "--cpu-seconds", "1e9")
    assert out.returncode == 0, out.stderr[-3000:]
    rows = pd.read_csv(workdir / "board-cost.csv").set_index("method")
    assert (rows["capped_trials"] == 20).all()
    assert rows.loc["ranknet", "capped_job_s"] == pytest.approx(rows.loc["ranknet", "tuned_job_s"])


def test_a_shape_measured_at_one_size_borrows_the_exponent_and_the_grid_ratio(workdir: Path):
    out = report(workdir, "--shape", "yahoo")
    assert out.returncode == 0, out.stderr[-3000:]
    rows = pd.read_csv(workdir / "board-cost.csv").set_index("method")
    assert list(rows.index) == ["ranknet"]
    scale = 473_134 / DOCS[16]  # Yahoo Set 1's training documents
    assert rows.loc["ranknet", "b"] == pytest.approx(1.5)
    assert rows.loc["ranknet", "fit_s"] == pytest.approx(20 * scale ** 1.5)
    assert rows.loc["ranknet", "default_job_s"] == pytest.approx(3 * 20 * scale ** 1.5)
    assert re.search(r"^\| ranknet \| 20 \| 1.50 \(mslr30k's\) \|", out.stdout, re.M), out.stdout


def test_a_fit_whose_rounds_jump_between_sizes_is_grown_linearly_from_its_largest_point(workdir: Path):
    """AdaRank stops when its ranking stops changing: 8 rounds at one size, its 500 at the next
    (measured on MSLR-shaped folds). A power law through those two times would predict days;
    the report grows the largest point linearly and says why."""
    small, large = fit(16, "adarank_map", "grid0", 2.0, True), fit(8, "adarank_map", "grid0", 50.0, True)
    small["history"], large["history"] = 8, 500
    with open(workdir / "fits.jsonl", "a") as f:
        f.write(json.dumps(small) + "\n" + json.dumps(large) + "\n")
    out = subprocess.run([sys.executable, str(REPO / "benchmarks" / "bench_board_cost.py"), "--report-only",
                          "--workdir", str(workdir), "--methods", "adarank_map"],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-3000:]
    row = pd.read_csv(workdir / "board-cost.csv").set_index("method").loc["adarank_map"]
    assert row["fit_s"] == pytest.approx(50.0 * FULL / DOCS[8]) and bool(row["lower_bound"])
    assert "rounds 8 -> 500: linear from the largest" in out.stdout
    # and the footprint the config check reads says the same (a power law would refuse it: days)
    from rankstudy.rankers.footprint import load_footprints

    path = workdir / "footprints.yaml"
    out = subprocess.run([sys.executable, str(REPO / "benchmarks" / "bench_board_cost.py"), "--report-only",
                          "--workdir", str(workdir), "--methods", "adarank_map", "--write-footprints", str(path)],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-3000:]
    growth = {f.method: f for f in load_footprints(path)}["adarank_map"].cpu_seconds
    assert growth.at(FULL) == pytest.approx(row["fit_s"], rel=1e-9) and growth.bound


def test_an_exponent_from_fits_stopped_at_a_larger_size_is_not_lent(workdir: Path):
    """XGBoost rank:pairwise on MSLR-shaped folds: 76 CPU-s at 1/16, 72 at 1/8 (early stopping
    kept fewer trees), stopped at the cap at 1/4; its b of about 0 is a bound, not a growth to
    lend: the Yahoo-shaped point is grown linearly instead (and said to be a lower bound)."""
    fits = [fit(16, "xgb_pairwise", "grid0", 76.0, True), fit(8, "xgb_pairwise", "grid0", 72.0, True),
            fit(4, "xgb_pairwise", "grid0", None, True, "capped"),
            fit(16, "xgb_pairwise", "grid0", 100.0, True, shape="yahoo")]
    with open(workdir / "fits.jsonl", "a") as f:
        f.write("".join(json.dumps(r) + "\n" for r in fits))
    out = subprocess.run([sys.executable, str(REPO / "benchmarks" / "bench_board_cost.py"), "--report-only",
                          "--workdir", str(workdir), "--methods", "xgb_pairwise", "--shape", "yahoo"],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-3000:]
    row = pd.read_csv(workdir / "board-cost.csv").set_index("method").loc["xgb_pairwise"]
    assert row["fit_s"] == pytest.approx(100.0 * 473_134 / DOCS[16]) and bool(row["lower_bound"])


def test_footprints_written_from_the_fits_predict_what_the_report_predicts(workdir: Path, tmp_path: Path):
    """--write-footprints: each method's growth as config/footprints.yaml holds it, read back by the
    config check's arithmetic (rankstudy.rankers.footprint) to the report's own full-size figures."""
    from rankstudy.rankers.footprint import load_footprints, node_problem

    path = tmp_path / "footprints.yaml"
    out = report(workdir, "--write-footprints", str(path))
    assert out.returncode == 0, out.stderr[-3000:]
    prints = {f.method: f for f in load_footprints(path)}
    rows = pd.read_csv(workdir / "board-cost.csv").set_index("method")
    for name in ("ranknet", "lambdamart", "structrank"):
        assert prints[name].cpu_seconds.at(FULL) == pytest.approx(rows.loc[name, "fit_s"], rel=1e-9), name
    assert prints["structrank"].cpu_seconds.bound and not prints["lambdamart"].cpu_seconds.bound
    assert prints["ranknet"].shape == "mslr30k" and "ranknet" in {f.method for f in prints.values()}
    problem = node_problem(prints["structrank"], FULL, 136, memory_gb=16, fit_cpu_hours=2)
    assert problem.startswith("predicted at least 85.9 h of CPU a fit")  # 600 s at 100k documents, quadratically
    assert f"up to about {(2 * 3600 / 600) ** 0.5 * DOCS[16]:,.0f}" in problem


# ---------------------------------------------------------------- the caps on one fit

@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("bench_board_cost", REPO / "benchmarks" / "bench_board_cost.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def stand_in(body: str) -> list[str]:
    """A child that behaves as the benchmark's: FIT_START, the fit (``body``), then its RESULT line."""
    return [sys.executable, "-c", textwrap.dedent("""
        import json, time
        print("FIT_START", flush=True)
        wall, cpu = time.perf_counter(), time.process_time()
        {body}
        print("RESULT " + json.dumps({{"status": "ok", "wall_s": time.perf_counter() - wall,
                                      "cpu_s": time.process_time() - cpu, "rss_growth_mb": 0.0}}), flush=True)
        """).format(body=body)]


def test_a_fit_that_sleeps_past_the_cap_is_not_stopped_by_it(bench):
    """The machine's other load stretches a fit's wall time, not its CPU: a fit that waits well
    past the cap in wall seconds but spends little CPU ends and is measured (SVM-NDCG's Yahoo-shaped
    fit at 1/16 took 8 CPU-s in 194 s of wall beside the test suite: a wall cap stops such fits
    for the load, not for their cost)."""
    out = bench.watch(stand_in("time.sleep(1.5)"), cap=0.3, max_gb=1, wall_cap=30, grace=0.3)
    assert out["status"] == "ok", out
    assert out["wall_s"] >= 1.5 and out["cpu_s"] < 0.3
    assert (out["cpu_cap_s"], out["wall_cap_s"]) == (0.3, 30)


def test_a_fit_that_spends_the_cap_in_cpu_is_stopped_there(bench):
    out = bench.watch(stand_in("while True: pass"), cap=0.3, max_gb=1, wall_cap=60, grace=0.3)
    assert (out["status"], out["stopped_by"]) == ("capped", "cpu"), out
    # stopped once the cap and its grace are spent, long before the wall guard
    assert 0.6 <= out["cpu_s"] < 3 and out["wall_s"] < 30
    assert "CPU-s" in out["problem"]


def test_a_fit_that_hangs_asleep_is_stopped_by_the_wall_guard(bench):
    out = bench.watch(stand_in("time.sleep(3600)"), cap=0.3, max_gb=1, wall_cap=1.0, grace=0.3)
    assert (out["status"], out["stopped_by"]) == ("capped", "wall"), out
    assert 1.3 <= out["wall_s"] < 10 and out["cpu_s"] < 0.3
    assert "wall guard" in out["problem"]


def test_a_child_that_never_starts_its_fit_says_it_timed_out_loading(bench):
    """StructRank's warm-up fit on 5 Istella-shaped queries ran past the load timeout: the record
    said "no fit started: " and nothing more (its stderr was empty)."""
    out = bench.watch([sys.executable, "-c", "import time; time.sleep(3600)"], cap=0.3, max_gb=1, wall_cap=60,
                      load_timeout=1.0)
    assert out["status"] == "error", out
    assert out["problem"] == ("no fit started: not started within 1 s of loading the splits and the warm-up fit "
                              "on 5 queries"), out
    crashed = bench.watch([sys.executable, "-c", "raise SystemExit('no such data')"], cap=0.3, max_gb=1, wall_cap=60)
    assert crashed["problem"] == "no fit started: no such data", crashed


def test_the_next_size_is_predicted_and_skipped_in_cpu_seconds(bench):
    """The skip rule compares CPU-seconds with the CPU cap: a fit that took 8 CPU-s in 250 s of
    wall (a busy machine) is not predicted over a 300 s cap at twice the documents."""
    slow_wall = fit(16, "svm_ndcg", "grid0", 8.0, True) | {"wall_s": 250.0}
    assert bench.skip_reason([slow_wall], "mslr30k", "svm_ndcg", DOCS[8], 300, 12, None) == ""
    dear = fit(16, "svm_ndcg", "grid0", 250.0, True) | {"wall_s": 260.0}
    assert "CPU-s" in bench.skip_reason([dear], "mslr30k", "svm_ndcg", DOCS[8], 300, 12, None)


def test_a_fit_stopped_with_little_cpu_spent_does_not_skip_the_next_size(bench):
    """A fit stopped by the wall (the guard, or an older run's wall cap) after 30 CPU-s is at least
    60 CPU-s at twice the documents, not over a 300 s CPU cap: that size is run. One stopped at the
    CPU cap is over it at any larger size, and its other candidates at its own size are skipped."""
    by_wall = fit(16, "mart", "grid0", None, True, "capped") | {"wall_s": 330.0, "cpu_s": 30.0}
    assert bench.skip_reason([by_wall], "mslr30k", "mart", DOCS[8], 300, 12, None) == ""
    by_cpu = fit(16, "mart", "grid0", None, True, "capped") | {"wall_s": 400.0, "cpu_s": 330.0, "stopped_by": "cpu"}
    assert "over the 300 CPU-s cap" in bench.skip_reason([by_cpu], "mslr30k", "mart", DOCS[8], 300, 12, None)
    assert bench.skip_reason([by_cpu], "mslr30k", "mart", DOCS[16], 300, 12, "grid1")


def test_the_rotation_s_folds_of_one_synthetic_data_set_are_their_own(bench, tmp_path: Path):
    """bench_pruning's --shape --folds: fold 1 keeps its folder (the records already made on it),
    fold 2 is the rotation's next fold of the same generated parts: other training queries."""
    from rankstudy.data.rankdata import RankData

    one, two = (bench.prepare(tmp_path, "yahoo", 400, fold=f) for f in (1, 2))
    assert bench.data_dir(tmp_path, "yahoo", 400).name == "yahoo-1of400"
    assert bench.data_dir(tmp_path, "yahoo", 400, 2).name == "yahoo-1of400-fold2"
    assert one["generator"] == two["generator"] and (one["fold"], two["fold"]) == (1, 2)
    train = [RankData.from_npz(bench.data_dir(tmp_path, "yahoo", 400, f) / "train.npz") for f in (1, 2)]
    assert not (len(train[0].y) == len(train[1].y) and (train[0].X == train[1].X).all())


def test_the_board_pruned_where_bench_pruning_measured_what_the_pruner_saves(workdir: Path, tmp_path: Path):
    """--pruning: each tuned job's CPU times the median pruned / unpruned CPU of bench_pruning's
    studies, from the shape's folds where measured there (else LETOR's), each pruned study against
    the unpruned one of its own file; a method not measured stays unpruned."""
    def study(fold, method, pruner, cpu, best, **more):
        return json.dumps({"fold": fold, "method": method, "pruner": pruner, "trials": 20, "cpu_seconds": cpu,
                           "best": best, **more}) + "\n"

    one, other = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    one.write_text(study("mslr30k-1of32", "lambdamart", "none", 100, 0.80)
                   + study("mslr30k-1of32", "lambdamart", "hyperband", 40, 0.79)
                   + study("MQ2008 fold 1", "lambdamart", "none", 10, 0.5)
                   + study("MQ2008 fold 1", "lambdamart", "hyperband", 9, 0.5)
                   + study("MQ2008 fold 1", "ranknet", "median", 10, 0.5))
    # ranknet's unpruned study is in another file: not paired with the one above; its own file's pair is
    other.write_text(study("MQ2008 fold 1", "ranknet", "none", 10, 0.5) + study("MQ2008 fold 1", "ranknet", "median", 5, 0.49)
                     + study("MQ2008 fold 2", "ranknet", "none", 20, 0.5))
    out = report(workdir, "--pruning", str(one), str(other), "--pruner", "hyperband", "median")
    assert out.returncode == 0, out.stderr[-3000:]
    assert "| lambdamart | `hyperband` | 0.40 | +0.0100 | 1 mslr30k-shaped fold |" in out.stdout
    assert "| ranknet | `median` | 0.50 | +0.0100 | 1 LETOR fold |" in out.stdout
    assert "structrank |" not in out.stdout.split("| method | pruner")[1]
    rows = pd.read_csv(workdir / "board-cost.csv").set_index("method")
    assert rows.loc["lambdamart", "pruned_job_s"] == pytest.approx(0.4 * rows.loc["lambdamart", "tuned_job_s"])
    assert rows.loc["ranknet", "pruned_job_s"] == pytest.approx(0.5 * rows.loc["ranknet", "tuned_job_s"])
    assert rows.loc["structrank", "pruned_job_s"] == pytest.approx(rows.loc["structrank", "tuned_job_s"])
    assert "| tuned (20 trials), pruned where measured (2 methods; the others unpruned) |" in out.stdout
    # trials on a quarter of the queries: 20 CPU-s of trials, 30 with the refit, of the reference's 100
    fraction = tmp_path / "fraction.jsonl"
    fraction.write_text(study("mslr30k-1of32", "lambdamart", "none", 90, 0.80, call_cpu_seconds=100)
                        + study("mslr30k-1of32", "lambdamart", "none, train fraction 0.25", 20, 0.81,
                                call_cpu_seconds=30, train_fraction=0.25))
    out = report(workdir, "--pruning", str(fraction), "--pruner", "none, train fraction 0.25")
    assert out.returncode == 0, out.stderr[-3000:]
    assert "| lambdamart | `none, train fraction 0.25` | 0.30 | -0.0100 | 1 mslr30k-shaped fold |" in out.stdout
    rows = pd.read_csv(workdir / "board-cost.csv").set_index("method")
    assert rows.loc["lambdamart", "pruned_job_s"] == pytest.approx(0.3 * rows.loc["lambdamart", "tuned_job_s"])


def test_bench_pruning_s_control_a_capped_study_without_a_pruner_is_its_own_arm(tmp_path: Path):
    """--pruner none with --cpu-share: the control (what the cap alone gives), kept apart from the
    unpruned reference it is compared with, not mistaken for it; --train-fraction an arm of its
    own, whose CPU is its whole call's (its trials and the refit on the whole fold)."""
    import argparse

    spec = importlib.util.spec_from_file_location("bench_pruning", REPO / "benchmarks" / "bench_pruning.py")
    pruning = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(pruning)

    def settings(pruner, cpu_share=None, pruned_trials=None, train_fraction=1.0):
        return argparse.Namespace(pruner=pruner, cpu_share=cpu_share, pruned_trials=pruned_trials, trials=20,
                                  sampler="tpe", train_fraction=train_fraction, out=tmp_path / "studies.jsonl")

    args = settings("none", 0.32, 60)
    assert pruning.arm_name(args) == "none, capped"
    assert pruning.arm_name(settings("none")) == "none"
    assert pruning.arm_name(settings("median", 0.32, 60)) == "median"
    assert pruning.arm_name(settings("none", train_fraction=0.25)) == "none, train fraction 0.25"
    rows = [{"fold": "MQ2008 fold 1", "method": "lambdamart", "pruner": "none", "best": 0.55, "cpu_seconds": 6.0,
             "call_cpu_seconds": 6.5, "pruned": 0},
            {"fold": "MQ2008 fold 1", "method": "lambdamart", "pruner": "none, capped", "best": 0.54, "cpu_seconds": 2.0,
             "pruned": 0},
            # the trials spent 1.5 CPU-s, the refit on the whole fold 1.1 more: 2.6 of the reference's 6.5
            {"fold": "MQ2008 fold 1", "method": "lambdamart", "pruner": "none, train fraction 0.25", "best": 0.56,
             "cpu_seconds": 1.5, "call_cpu_seconds": 2.6, "pruned": 0}]
    args.out.write_text("".join(json.dumps(row) + "\n" for row in rows))
    assert "| lambdamart | 1 | +0.0100 | +0.0100 | 0.33 | 0.0 | no |" in pruning.report(args)
    assert "| lambdamart | 1 | -0.0100 | -0.0100 | 0.40 | 0.0 | no |" in pruning.report(settings("none", train_fraction=0.25))


def test_learn_shaped_checks_a_method_against_a_random_ranking_on_a_shaped_fold(tmp_path: Path):
    out = subprocess.run([sys.executable, str(REPO / "benchmarks" / "bench_learn_shaped.py"), "ranksvm", "--shape", "yahoo",
                          "--size", "400", "--workdir", str(tmp_path)], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    got = json.loads(out.stdout)
    assert got["method"] == "ranksvm" and got["vali_ndcg@10"] > got["random_vali_ndcg@10"] + 0.05
    assert got["dtype"] == "float64" and got["rss_growth_mb"] >= 0
    assert got["objective"]["final"] < got["objective"]["start"]
    bad = subprocess.run([sys.executable, str(REPO / "benchmarks" / "bench_learn_shaped.py"), "ranksvm", "--set", "C"],
                         capture_output=True, text=True, timeout=600)
    assert bad.returncode == 2 and "--set 'C': expected key=value" in bad.stderr
