"""End to end: the real `snakemake` CLI on a tiny config in a temporary copy of the workflow
(a git repository of its own), run once and shared by the checks of its outputs, its MLflow
store, and what a rerun redoes: nothing after a commit, no training for a new metric, and
only the forced fold's run when one fold is forced (run once per session by tests/conftest.py;
a test that changes it works on a copy, pipeline_runs.copy_run). Then the studies of
config/studies on tiny data, and real LETOR data through the CLI."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from pipeline_runs import (NO_MLFLOW, REPO, SNAKEMAKE, TINY, copy_run, features_dir, fold_runs, git, job_counts,
                           make_workdir, ndcg_at_10, protocol_of, run_dir, snakemake)
from rankstudy.pipeline import layout


@pytest.fixture
def tiny_run(tiny_base):
    """The tiny study's run (pipeline_runs.TINY), built once per session by tests/conftest.py and
    shared: read it, never change it."""
    return tiny_base


@pytest.fixture
def tiny_copy(tiny_base, tmp_path):
    """A copy of the tiny study's run for a test that changes it, its files' times and Snakemake's
    metadata with it (as a user's clone copied elsewhere): Snakemake finds it up to date."""
    return copy_run(tiny_base[0], tmp_path / "tiny")


def test_tables_plots_and_runs_exist(tiny_run):
    workdir, _ = tiny_run
    for ext in ("csv", "md", "tex", "html"):
        text = (workdir / f"results/tables/default/synthetic.{ext}").read_text()
        # LaTeX braces the brackets: look for the names, not the exact label
        assert all(name in text for name in ("ranknet", "pointwise", "lambdamart", "first", "rho0.10"))
    assert (workdir / "results/plots/default/synthetic.ndcg_at_k.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    table = pd.read_csv(workdir / "results/tables/default/synthetic.csv")
    # long format: one row per (metric, system); 3 methods x 2 feature sets, 3 metrics
    assert table["system"].nunique() == 6 and len(table) == 18
    # every system against the baseline, per metric; the 12 validation queries of each fold are warned about
    pairs = pd.read_csv(workdir / "results/tables/default/synthetic.pairs.csv", keep_default_na=False)
    assert len(pairs) == 5 * 3 and (pairs["other"] == "ranknet [first]").all()
    md = (workdir / "results/tables/default/synthetic.md").read_text()
    assert "fewer than 20 validation queries in fold 1 (12 queries), fold 2 (12 queries)" in md
    # what the data set can separate, and no tied scores flagged where the models rank
    assert "(MDD)" in md and "Power: MDD 0." in md and "differences in ndcg@10 below it cannot" in md
    assert not table["tied_scores"].any() and (pairs["ci_level"] >= 0.95).all() and (pairs["mdd"] > 0).all()
    run = run_dir(workdir, "ranknet", 2, "rho0.10")
    for name in ("model.json", "fit.json", "scores.test.tsv", "run.test.trec", "qrels.test.txt",
                 "metrics.per_query.test.csv", "metrics.per_query.vali.csv", "summary.json", "history.json",
                 "selection.csv"):
        assert (run / name).stat().st_size > 0, name
    ties = json.loads((run / "summary.json").read_text())["score_ties"]["test"]
    assert ties["all_tied"] == 0 and not ties["flagged"] and ties["queries"] > 0
    pairs = pd.read_csv(features_dir(workdir, "rho0.10", 1) / "pairs.tsv", sep="\t")
    assert len(pairs) > 0 and (pairs["rho"].abs() >= 0.1).all()


def test_jobs_run_on_their_declared_threads(tiny_run):
    """A method's `threads` entry is its train jobs' (lambdamart asks for 2 here); the rest get one
    each (their BLAS limited to it), as each job's log says."""
    workdir, _ = tiny_run
    keys = dict(study="default", dataset="synthetic", featureset="first", fold=1, **protocol_of(workdir).keys())
    expected = {layout.log("train").format(method="lambdamart", **keys): 2,
                layout.log("train").format(method="ranknet", **keys): 1,
                layout.log("pair_correlations").format(**keys): 1,
                layout.log("evaluate").format(method="lambdamart", **keys): 1}
    for log, threads in expected.items():
        assert f"threads: {threads}" in (workdir / log).read_text().splitlines()[0], log


def test_per_query_metrics_match_a_recomputation_from_scores(tiny_run):
    workdir, _ = tiny_run
    run = run_dir(workdir, "pointwise", 1)
    scores = pd.read_csv(run / "scores.test.tsv", sep="\t")
    per_query = pd.read_csv(run / "metrics.per_query.test.csv").set_index("qid")
    assert list(scores.columns) == ["qid", "doc", "label", "score"]
    for qid, group in scores.groupby("qid", sort=False):
        expected = ndcg_at_10(group["label"].to_numpy(), group["score"].to_numpy())
        assert per_query.loc[qid, "ndcg@10"] == pytest.approx(expected, abs=1e-12)


def test_mlflow_holds_one_run_per_fold_and_method_plus_parents(tiny_run):
    workdir, _ = tiny_run
    runs = fold_runs(workdir)
    folds = runs[runs.level == "fold"]
    assert len(folds) == 2 * 3 * 2 and folds.key.is_unique
    assert (runs.level == "parent").sum() == 2 * 3
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=f"sqlite:///{workdir}/results/mlflow.db")
    run_id = folds.set_index("key").loc["default/synthetic/first/pointwise/fold1", "id"]
    run = client.get_run(run_id)
    assert run.data.tags["dataset"] == "synthetic" and run.data.tags["git_commit"]
    assert {"test.ndcg10", "vali.ndcg10", "test.err", "test.map"} <= set(run.data.metrics)
    # the fold's jobs' wall and CPU seconds and peak memory, as their benchmark files say
    bench = pd.read_csv(workdir / layout.benchmark("train").format(study="default", dataset="synthetic",
                                                                  featureset="first", method="pointwise", fold=1),
                        sep="\t")
    # as tags: MLflow's run page would chart them before the learning curves (issue 45.5)
    assert float(run.data.tags["usage.train.wall_s"]) == pytest.approx(bench["s"].iloc[-1])
    assert float(run.data.tags["usage.train.max_rss_mb"]) == pytest.approx(bench["max_rss"].iloc[-1])
    assert {f"usage.{r}.{k}" for r in ("parse_fold", "clean_fold", "featurize", "evaluate")
            for k in ("wall_s", "cpu_s", "max_rss_mb")} <= set(run.data.tags)
    assert not [name for name in run.data.metrics if "/" in name or name.endswith("seconds")]
    # the training curve and both l2 candidates of the grid, as step metrics
    assert len(client.get_metric_history(run_id, "train_loss")) > 2
    assert len(client.get_metric_history(run_id, "candidate.vali.ndcg10")) == 2
    selection = pd.read_csv(run_dir(workdir, "pointwise", 1) / "selection.csv")
    # the chosen candidate's score, not the last candidate's
    assert run.data.metrics["selection.vali.ndcg10"] == pytest.approx(
        selection.loc[selection["selected"], "vali.ndcg@10"].iloc[0])
    assert float(run.data.tags["usage.train_seconds"]) > 0
    assert {a.path for a in client.list_artifacts(run_id)} >= {"model.json", "scores.test.tsv", "config.resolved.json"}
    # names say what runs are; a fold run spans its fold's training; a parent names the folds it averages
    fold = folds.set_index("key").loc["default/synthetic/first/pointwise/fold1"]
    assert fold["name"] == "default: pointwise [first] synthetic fold1"
    fit = json.loads((run_dir(workdir, "pointwise", 1) / "fit.json").read_text())
    assert fold["start"] == fit["started_ms"] < fit["finished_ms"] == fold["end"]
    parents = runs[runs.level == "parent"].set_index("name")
    assert parents.loc["default: pointwise [first] synthetic", "folds"] == "1,2"
    parent_tags = client.get_run(parents.loc["default: pointwise [first] synthetic", "id"]).data.tags
    assert parent_tags["kind"] == "linear" and parent_tags["method.loss"] == "pointwise_mse"
    assert parent_tags["grid.l2"] == "[0.01, 1.0]"
    # the settings are the parent's params too (the compare view lines parents up by params), and
    # a parent holds its folds' means under the fold runs' metric names
    parent = client.get_run(parents.loc["default: pointwise [first] synthetic", "id"])
    assert parent.data.params == {"kind": "linear", "method.loss": "pointwise_mse", "grid.l2": "[0.01, 1.0]"}
    pointwise = folds[folds.key.str.startswith("default/synthetic/first/pointwise/")]
    assert parent.data.metrics["test.ndcg10"] == pytest.approx(
        np.mean([client.get_run(i).data.metrics["test.ndcg10"] for i in pointwise.id]))
    # each grid candidate of a fold is a run nested under the fold run
    candidates = client.search_runs([client.get_experiment_by_name("rankstudy").experiment_id],
                                    f"tags.`mlflow.parentRunId` = '{run_id}'")
    assert sorted(c.data.tags["rankstudy.key"].rsplit("/", 1)[1] for c in candidates) == ["candidate1", "candidate2"]
    assert {c.data.params["l2"] for c in candidates} == {"0.01", "1.0"}
    # log_runs' record names the runs it logged
    record = json.loads((workdir / layout.fill(layout.RUNS_LOGGED, study="default", dataset="synthetic")).read_text())
    pointwise_record = next(s for s in record["systems"] if s["method"] == "pointwise")
    assert pointwise_record["fold_run_ids"]["1"] == run_id
    # the UI opens on the training runs, not on the GenAI pages
    assert client.get_experiment_by_name("rankstudy").tags["mlflow.experimentKind"] == "custom_model_development"


def test_lint_reports_no_error(tiny_run):
    workdir, _ = tiny_run
    out = subprocess.run([SNAKEMAKE, "--lint", "--configfile", "test.yaml", "--replace-workflow-config"],
                         cwd=workdir, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr


TABLE_FILES = ("csv", "md", "tex", "pairs.csv", "timing.csv", "timing.md", "params.csv", "params.md")


def test_the_report_holds_every_table_and_builds_without_a_warning(tiny_run):
    """`snakemake --report`: every table file as a page its viewer shows (it opens a CSV,
    Markdown or LaTeX file empty), no RuntimeWarning, and no path of this machine in the job
    params it shows (the MLflow store is no param)."""
    import zipfile

    workdir, _ = tiny_run
    out = snakemake(workdir, "--report", "report.zip")
    assert "RuntimeWarning" not in out.stdout + out.stderr and "never awaited" not in out.stderr, out.stderr
    with zipfile.ZipFile(workdir / "report.zip") as archive:
        files = {Path(name).name: archive.read(name) for name in archive.namelist()}
    pages = {suffix: files[f"synthetic.{suffix}.html"].decode() for suffix in TABLE_FILES}
    tables = workdir / "results/tables/default"
    for suffix in ("csv", "pairs.csv", "timing.csv", "params.csv"):  # every row, as a table
        rows = pd.read_csv(tables / f"synthetic.{suffix}")
        assert pages[suffix].count("<tr") == len(rows) + 1 and all(f"<th>{c}</th>" in pages[suffix] for c in rows)
    for suffix in ("md", "timing.md", "params.md"):  # rendered, not as text
        assert "<table>" in pages[suffix] and "| system" not in pages[suffix] and "ranknet [first]" in pages[suffix]
    assert "tabular" in pages["tex"]
    assert "synthetic.html" in files and "synthetic.ndcg_at_k.png" in files
    report = files["report.html"].decode()
    for suffix in TABLE_FILES:  # shown as HTML, labelled by table and file
        assert f'"file": "{suffix}"' in report
    assert '"mime_type": "text/csv"' not in report
    assert str(workdir) not in report and str(workdir.resolve()) not in report
    assert "mlflow=" not in report and "tracking_uri=" not in report


def test_a_new_commit_plans_nothing(tiny_copy):
    workdir = tiny_copy
    (workdir / "README.md").write_text("a change that is not code\n")
    git(workdir, "add", ".")
    git(workdir, "commit", "-qm", "docs")
    dry = snakemake(workdir, "--dry-run")
    assert "Nothing to be done" in dry.stdout + dry.stderr, dry.stdout


@pytest.mark.parametrize("change", ["data_root=/nonexistent/elsewhere", "synthetic_qa={n_questions: 50}",
                                    "report={n_resamples: 200}"])
def test_a_change_that_does_not_touch_a_job_plans_nothing(tiny_run, change):
    """data_root is not the embedded data set's business, nor is the QA generator's section; a
    number set inside a section on the command line is a number (no rerun, no validation error)."""
    workdir, _ = tiny_run
    dry = snakemake(workdir, "--dry-run", "--config", change)
    assert "Nothing to be done" in dry.stdout + dry.stderr, dry.stdout


def test_a_new_report_metric_evaluates_again_without_training(tiny_copy):
    workdir = tiny_copy
    config = yaml.safe_load((workdir / "test.yaml").read_text())
    config["evaluation"]["metrics"] = config["evaluation"]["metrics"] + ["err@5"]
    (workdir / "more-metrics.yaml").write_text(yaml.safe_dump(config))
    counts = job_counts(snakemake(workdir, "--dry-run", configfile="more-metrics.yaml").stdout)
    assert "train" not in counts
    assert counts["evaluate"] == 2 * 3 * 2 and counts["aggregate"] == 3 * 2


def test_fits_made_by_other_code_are_said_with_the_command_that_retrains_them(tiny_copy):
    """A change of the package reruns nothing (issue 45.4): every fit records the code that made
    it, and a run, also one with nothing to do, says which fits other code made and how to redo
    them; the command it gives (forcing one fold) reruns only that fold's jobs, replaces its MLflow
    run and keeps every other run."""
    from rankstudy.tracking.provenance import code_digest

    workdir = tiny_copy
    fits = sorted(workdir.glob("results/runs/default/synthetic/*/*/fold*/fit.json"))
    assert len(fits) == 12 and {json.loads(f.read_text())["code_digest"] for f in fits} == {code_digest()}
    # fold 2 of ranknet as an older rankstudy left it: no code recorded (its time kept: no input changed)
    older = run_dir(workdir, "ranknet", 2) / "fit.json"
    record = json.loads(older.read_text())
    del record["code_digest"]
    stat = older.stat()
    older.write_text(json.dumps(record))
    os.utime(older, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    out = snakemake(workdir)
    said = [line for line in out.stderr.splitlines() if line.startswith("rankstudy: ")]
    target = str((run_dir(workdir, "ranknet", 2) / "model.json").relative_to(workdir))
    assert said == [f"rankstudy: 1 of 12 fits were made by other code than this rankstudy's ({code_digest()}, "
                    "fit.json's code_digest), and so their results: synthetic/first/ranknet/fold2",
                    "rankstudy: to retrain them: snakemake --cores 2 <this run's --configfile/--config> "
                    f"--forcerun {target}"]
    assert "Nothing to be done" in out.stdout + out.stderr
    before = fold_runs(workdir).query("level == 'fold'").set_index("key")["id"]
    retrain = snakemake(workdir, "--forcerun", target)
    # the jobs it planned (its Job stats, as a dry run shows them): that fold's, and what follows
    assert job_counts(retrain.stdout + retrain.stderr) == {"train": 1, "evaluate": 1, "aggregate": 1, "tables": 1,
                                                            "log_runs": 1, "all": 1}
    assert json.loads(older.read_text())["code_digest"] == code_digest()
    runs = fold_runs(workdir)
    after = runs.query("level == 'fold'").set_index("key")["id"]
    assert len(after) == 12 and after.index.is_unique and (runs.level == "parent").sum() == 6
    forced = "default/synthetic/first/ranknet/fold2"
    assert after[forced] != before[forced]
    assert after.drop(forced).equals(before.drop(forced))
    before, closing = retrain.stderr.split("rankstudy: study 'default' done", 1)
    assert "rankstudy: 1 of 12 fits were made by other code" in before  # said as the run starts
    assert "other code" not in closing and "code:" not in closing  # and no longer once it is done


def test_two_studies_of_one_data_set_share_the_data_and_never_overwrite_each_other(tiny_copy):
    """The tiny study's run (study default), then study B (same data and protocol, fold 1, the
    same method with another grid), then study C (fold 1, another cleaning): B reuses the default
    study's parsed splits and feature sets, C reuses the parsed splits only; neither touches the
    default study's runs, and a dry run of it afterwards plans nothing."""
    workdir = tiny_copy
    config = yaml.safe_load((workdir / "test.yaml").read_text())
    fold1 = {"folds": [1], "methods": {"ranknet": TINY["methods"]["ranknet"]},
             "report": {**TINY["report"], "baseline": "ranknet"}}
    for name, change in {"B": {"methods": {"ranknet": {**TINY["methods"]["ranknet"], "grid": {"l2": [1.0]}}}},
                         "C": {"cleaning": {"drop_no_relevant": ["train"], "chakrabarti": ["train"]}}}.items():
        (workdir / f"{name}.yaml").write_text(yaml.safe_dump({**config, **fold1, "study": name, **change}))
    fit_a = (run_dir(workdir, "ranknet", 1) / "fit.json").read_text()

    # what each run planned: its Job stats, as a dry run would show them
    out = snakemake(workdir, configfile="B.yaml")
    counts = job_counts(out.stdout + out.stderr)
    assert counts == {"train": 2, "evaluate": 2, "aggregate": 2, "tables": 1, "log_runs": 1, "all": 1}, counts
    out = snakemake(workdir, configfile="C.yaml")
    counts = job_counts(out.stdout + out.stderr)
    assert "parse_fold" not in counts and counts["clean_fold"] == 1 and counts["featurize"] == 2, counts
    assert protocol_of(workdir, "C.yaml").cleaning != protocol_of(workdir).cleaning

    dry = snakemake(workdir, "--dry-run")
    assert "Nothing to be done" in dry.stdout + dry.stderr, dry.stdout
    assert (run_dir(workdir, "ranknet", 1) / "fit.json").read_text() == fit_a
    runs = fold_runs(workdir)
    folds = runs[runs.level == "fold"]
    assert len(folds) == 2 * 3 * 2 + 2 + 2 and folds.key.is_unique
    assert sorted({key.split("/")[0] for key in folds.key}) == ["B", "C", "default"]
    for study in ("default", "B", "C"):
        assert (workdir / f"results/tables/{study}/synthetic.md").exists()


def test_a_model_forced_not_to_learn_is_marked_in_tables_and_mlflow(tiny_copy):
    """A RankNet whose penalty pins w near 0 (its objective cannot fall) beside a normal one: its
    fold summary says why, the tables mark it, its MLflow runs carry rankstudy.learned=false."""
    from mlflow.tracking import MlflowClient

    stuck = {"kind": "linear", "params": {"loss": "ranknet", "l2": 1.0e6}}
    workdir = tiny_copy  # its ranknet is already trained
    config = yaml.safe_load((workdir / "test.yaml").read_text())
    config.update({"folds": [1], "features": {**TINY["features"], "rho": []},
                   "methods": {"ranknet": TINY["methods"]["ranknet"], "stuck": stuck}})
    (workdir / "test.yaml").write_text(yaml.safe_dump(config))
    snakemake(workdir)
    summary = json.loads((run_dir(workdir, "stuck", 1) / "summary.json").read_text())
    assert not summary["learned"]["learned"]
    assert "not clearly below its start" in summary["learned"]["problems"][0]
    assert json.loads((run_dir(workdir, "ranknet", 1) / "summary.json").read_text())["learned"]["learned"]
    md = (workdir / "results/tables/default/synthetic.md").read_text()
    assert "stuck [first] ⚠" in md and "ranknet [first] ⚠" not in md and "did not learn" in md
    csv = pd.read_csv(workdir / "results/tables/default/synthetic.csv")
    assert dict(csv.groupby("system")["learned"].first()) == {"ranknet [first]": True, "stuck [first]": False}
    chosen = pd.read_csv(workdir / "results/tables/default/synthetic.params.csv").set_index("system")
    assert chosen.loc["ranknet [first]", "l2"] == 0.01 and not chosen.loc["stuck [first]", "learned"]
    fit = json.loads((run_dir(workdir, "ranknet", 1) / "fit.json").read_text())
    assert chosen.loc["ranknet [first]", "selection_score"] == pytest.approx(fit["selection_score"])
    runs = fold_runs(workdir).set_index("key")
    client = MlflowClient(tracking_uri=f"sqlite:///{workdir}/results/mlflow.db")
    tags = client.get_run(runs.loc["default/synthetic/first/stuck/fold1", "id"]).data.tags
    assert tags["rankstudy.learned"] == "false" and "not clearly below" in tags["rankstudy.learned.problems"]
    assert client.get_run(runs.loc["default/synthetic/first/ranknet/fold1", "id"]).data.tags["rankstudy.learned"] == "true"
    # a failed training (an unwritable folder, a kill) leaves the fold's files removed: the next
    # plain run must make them again, not say "Nothing to be done"
    for name in ("model.json", "fit.json", "history.json", "selection.csv"):
        (run_dir(workdir, "stuck", 1) / name).unlink()
    counts = job_counts(snakemake(workdir, "--dry-run").stdout)
    assert counts == {"train": 1, "evaluate": 1, "aggregate": 1, "tables": 1, "log_runs": 1, "all": 1}, counts


def test_parsed_splits_not_kept_are_deleted_and_parsed_again_for_a_new_feature_set(tmp_path):
    one_method = {**TINY, "folds": [1], "methods": {"pointwise": TINY["methods"]["pointwise"]},
                  "report": {**TINY["report"], "baseline": "pointwise"},
                  "features": {**TINY["features"], "keep_prepared": False}}
    workdir = make_workdir(tmp_path, one_method)

    def built(*featuresets: str, configfile: str = "test.yaml") -> list[str]:
        # the feature sets as targets: what comes after them (training, tables) is not this test's
        return [str((features_dir(workdir, name, 1, configfile) / "train.npz").relative_to(workdir))
                for name in featuresets]

    snakemake(workdir, *built("first", "rho0.10"))
    keys = protocol_of(workdir).keys()
    parsed = workdir / layout.fill(layout.PARSED_DIR, fold=1, **keys)
    cleaned = workdir / layout.fill(layout.CLEANED_DIR, fold=1, **keys)
    assert sorted(p.name for p in parsed.iterdir()) == ["parsed.json"]
    assert sorted(p.name for p in cleaned.iterdir()) == ["meta.json"]
    assert (features_dir(workdir, "rho0.10", 1) / "train.npz").exists()
    dry = snakemake(workdir, "--dry-run", *built("first", "rho0.10"))
    assert "Nothing to be done" in dry.stdout + dry.stderr, dry.stdout
    config = yaml.safe_load((workdir / "test.yaml").read_text())
    config["features"]["rho"] = [0.1, 0.2]
    (workdir / "more-features.yaml").write_text(yaml.safe_dump(config))
    counts = job_counts(snakemake(workdir, "--dry-run", configfile="more-features.yaml").stdout)
    # a parse of the fold is newer than its built feature sets, so Snakemake builds them again too
    assert counts["parse_fold"] == 1 and counts["clean_fold"] == 1 and counts["featurize"] == 3, counts
    snakemake(workdir, *built("first", "rho0.10", "rho0.20", configfile="more-features.yaml"),
              configfile="more-features.yaml")
    assert (features_dir(workdir, "rho0.20", 1) / "train.npz").exists()
    assert sorted(p.name for p in parsed.iterdir()) == ["parsed.json"]
    assert sorted(p.name for p in cleaned.iterdir()) == ["meta.json"]


def test_unknown_method_kind_fails_at_start_with_valid_names(tmp_path):
    workdir = make_workdir(tmp_path, {"methods": {"x": {"kind": "nosuchkind"}}})
    out = subprocess.run([SNAKEMAKE, "--cores", "1", "-n", "--configfile", "test.yaml", "--replace-workflow-config"],
                         cwd=workdir, capture_output=True, text=True, timeout=300)
    assert out.returncode != 0
    assert "methods.x.kind" in out.stderr + out.stdout and "lambdamart" in out.stderr + out.stdout


def test_mq2008_every_method_beats_random(tmp_path, shared_data):
    """Real LETOR data through the `local` path: every default method, on two of the five folds
    (a fold is the same code's work as another; the methods' learning on OHSUMED is their own
    modules' tests')."""
    methods = yaml.safe_load((REPO / "config/config.yaml").read_text())["methods"]
    for spec in methods.values():  # one grid point (the middle): selection is not what is tested here
        spec["grid"] = {k: [v[len(v) // 2]] for k, v in spec["grid"].items()}
    folds = [1, 2]
    workdir = make_workdir(tmp_path, {"datasets": ["MQ2008"], "data_root": str(shared_data), "methods": methods,
                                      "folds": folds,
                                      "features": {"normalization": "zscore", "first_order": True, "rho": []},
                                      "report": {"baseline": "ranknet", "metrics": ["ndcg@10", "map"],
                                                 "n_resamples": 500}})
    snakemake(workdir, *NO_MLFLOW)
    # every test query of the folds, as the files have them (the LETOR line's second field)
    n_test = sum(len({line.split()[1] for line in gzip.open(shared_data / f"MQ2008/Fold{fold}/test.txt.gz", "rt")})
                 for fold in folds)
    rng = np.random.default_rng(0)
    for method in methods:
        ours, rand = [], []
        for fold in folds:
            scores = pd.read_csv(run_dir(workdir, method, fold, dataset="MQ2008") / "scores.test.tsv", sep="\t")
            for _, g in scores.groupby("qid", sort=False):
                labels = g["label"].to_numpy()
                ours.append(ndcg_at_10(labels, g["score"].to_numpy()))
                rand.append(np.mean([ndcg_at_10(labels, rng.random(len(labels))) for _ in range(5)]))
        assert len(ours) == n_test
        assert np.mean(ours) > np.mean(rand) + 0.08, (method, np.mean(ours), np.mean(rand))


def test_study_config_renders_the_papers_table(tmp_path):
    """A study file (merged over the defaults, as --configfile does) on tiny synthetic data:
    Table 5 exercises the quad feature sets (chunked quadratic functional) and 'No. feats'."""
    from snakemake.utils import update_config

    study = yaml.safe_load((REPO / "config/studies/tran2011-table5.yaml").read_text())
    update_config(study, {"folds": [1], "synthetic": {"n_queries": 60, "n_features": 17}})
    workdir = make_workdir(tmp_path, {})
    config = yaml.safe_load((workdir / "test.yaml").read_text())
    update_config(config, study)
    (workdir / "test.yaml").write_text(yaml.safe_dump(config))
    snakemake(workdir, *NO_MLFLOW)
    paper = pd.read_csv(workdir / "results/tables/tran2011-table5/synthetic.paper.csv", dtype={"row": str})
    assert len(paper) == 8 * 5 and paper["published"].notna().all()
    feats = paper[paper["column"] == "No. feats"].set_index("row")["ours"]
    assert feats["first-order (519 feats)"] == 17 and feats["rho=0.00"] == 17 + 17 * 18 / 2
    ndcg = paper[paper["column"] == "N@10"].set_index("row")["ours"]
    assert ndcg.between(0, 1).all()
    # the planted pairwise features: second-order beats first-order on the synthetic set
    assert ndcg["rho=0.00"] > ndcg["first-order (519 feats)"] + 0.05
    text = (workdir / "results/tables/tran2011-table5/synthetic.paper.md").read_text()
    assert "Yahoo! LTR challenge subset" in text and "rho=0.30" in text


def test_table4_study_on_a_users_qa_table(tmp_path):
    """Table 4's separate-representation functionals on a user's own QA table (the `user_qa`
    registry entry): parsing, 5 parts by question, bag-of-words fitted on training questions."""
    from snakemake.utils import update_config

    rng = np.random.default_rng(0)
    rows = []
    for q in range(60):
        topic = q % 6
        words = lambda t, n: " ".join(f"topic{t}word{i}" for i in rng.integers(0, 15, n))
        rows.append((q, words(topic, 6), words(topic, 8), 1))
        for _ in range(rng.integers(2, 6)):
            rows.append((q, rows[-1][1], words((topic + rng.integers(1, 6)) % 6, 8), 0))
    data_root = tmp_path / "data"
    (data_root / "user_qa").mkdir(parents=True)
    pd.DataFrame(rows, columns=["question_id", "question", "answer", "best"]).to_csv(
        data_root / "user_qa" / "qa.tsv", sep="\t", index=False)
    study = yaml.safe_load((REPO / "config/studies/tran2011-table4.yaml").read_text())
    update_config(study, {"datasets": ["user_qa"], "data_root": str(data_root), "folds": [1]})
    (tmp_path / "work").mkdir()
    workdir = make_workdir(tmp_path / "work", {})
    config = yaml.safe_load((workdir / "test.yaml").read_text())
    update_config(config, study)
    (workdir / "test.yaml").write_text(yaml.safe_dump(config))
    snakemake(workdir, *NO_MLFLOW)
    paper = pd.read_csv(workdir / "results/tables/tran2011-table4/user_qa.paper.csv")
    assert len(paper) == 6 and paper["published"].notna().all()
    # a random ranking of 3-6 answers has MRR around 0.5; the topic words make the best answer findable
    assert (paper["ours"] > 0.8).all(), paper


def test_dataset_without_validation_split_gets_one_from_training_queries(tmp_path, shared_data):
    """A registry entry of the user's own (like the full Istella release: train and test only),
    on the real MSLR-WEB sample files: vali is carved from a seeded share of training queries."""
    registry = yaml.safe_load((REPO / "config/datasets.yaml").read_text())
    registry["MSLR-WEB-tiny-sample"] = {
        "source": "manual", "n_features": 136, "labels": [0, 4], "folds": 1, "splits": ["train", "test"],
        "layout": "search_tiny_{split}.txt", "instructions": "shipped in ../shared/data"}
    workdir = make_workdir(tmp_path, {
        "datasets": ["MSLR-WEB-tiny-sample"], "data_root": str(shared_data), "folds": [1],
        "registry": "registry.yaml",
        "methods": {"ranknet": {"kind": "linear", "params": {"loss": "ranknet"}}},
        "features": {"normalization": "zscore", "first_order": True, "rho": []},
        "report": {"baseline": "ranknet", "metrics": ["ndcg@10"], "n_resamples": 100}})
    (workdir / "registry.yaml").write_text(yaml.safe_dump(registry))
    snakemake(workdir, *NO_MLFLOW)
    keys = protocol_of(workdir, dataset="MSLR-WEB-tiny-sample").keys()
    meta = json.loads((workdir / layout.fill(layout.FOLD_META, fold=1, **keys)).read_text())
    assert (meta["train.n_queries"], meta["vali.n_queries"], meta["test.n_queries"]) == (6, 1, 4)
    assert meta["test.n_docs"] == 403


def study_config(workdir: Path, name: str, overrides: dict, literal: str) -> str:
    """config/studies/{name}.yaml over the test config, then ``overrides``; without the paper's
    literal recipes (methods named ``*{literal}``) and lambdamart, and with one C: neither the
    recipes nor the grid is what these tests check. Returns the config file's name."""
    from snakemake.utils import update_config

    config = yaml.safe_load((workdir / "test.yaml").read_text())
    update_config(config, yaml.safe_load((REPO / f"config/studies/{name}.yaml").read_text()))
    update_config(config, overrides)
    kept = [m for m in config.get("run_methods") or [] if not m.endswith(literal) and m != "lambdamart"]
    if kept:
        config["run_methods"] = kept
    else:
        config.pop("run_methods", None)
    for spec in config["methods"].values():
        if "C" in (spec.get("grid") or {}):
            spec["grid"]["C"] = [10.0]
    (workdir / f"{name}.yaml").write_text(yaml.safe_dump(config))
    return f"{name}.yaml"


def test_chakrabarti_studies_render(tmp_path):
    """Figure 7's two feature maps and the timing study on tiny synthetic data: Figure 7's MRR@k
    table, and the timing table splitting the cutting plane's time (Figure 9's methods run on
    real data: the test below)."""
    workdir = make_workdir(tmp_path, {})
    tiny = {"folds": [1], "synthetic": {"n_queries": 60, "n_features": 17}}
    for name in ("fig7", "timing"):
        snakemake(workdir, *NO_MLFLOW, configfile=study_config(workdir, f"chakrabarti2008-{name}", tiny, "-literal"))
    fig7 = pd.read_csv(workdir / "results/tables/chakrabarti2008-fig7/synthetic.csv")
    assert set(fig7["metric"]) == {f"mrr@{k}" for k in range(1, 10)}
    timing = pd.read_csv(workdir / "results/tables/chakrabarti2008-timing/synthetic.timing.csv").set_index("system")
    assert (timing.loc["SVMndcg [first]", ["argmax_seconds", "qp_seconds"]] > 0).all()
    assert np.isnan(timing.loc["McRank [first]", "argmax_seconds"])  # LightGBM records no argmax
    assert (timing["train_job_seconds"] >= timing["fit_seconds"]).all()
    assert (timing["train_job_cpu_seconds"] > 0).all()  # wall and CPU both stated (issue 43)


def test_chakrabarti_fig9_on_mq2008_every_method_beats_random(tmp_path, shared_data):
    """Figure 9's methods and the L-BFGS RankSVM on real LETOR data (MQ2008 fold 1, cleaned as in
    the paper, one C): every method run beats a random ranking, is in MLflow and in the tables, and
    the figure's layout shows ours beside the published OHSUMED numbers. SVMmrr and SVMcombo, the
    dearest fits (10 and 15 of the run's 47 CPU-s of fitting), are left out: the same kind with
    other losses, each learning on real OHSUMED in tests/test_structsvm_ohsumed.py."""
    methods = ["SVMauc", "SVMmap", "SVMndcg", "SVMndcg-nc", "DORM", "McRank", "RankSVM"]
    workdir = make_workdir(tmp_path, {})
    snakemake(workdir, configfile=study_config(workdir, "chakrabarti2008-fig9", {
        "datasets": ["MQ2008"], "data_root": str(shared_data), "folds": [1], "report": {"n_resamples": 200},
        "run_methods": methods}, "-literal"))
    table = pd.read_csv(workdir / "results/tables/chakrabarti2008-fig9/MQ2008.csv")
    assert sorted(table["system"].unique()) == sorted(f"{m} [first]" for m in methods)
    paper = pd.read_csv(workdir / "results/tables/chakrabarti2008-fig9/MQ2008.paper.csv")
    assert len(paper) == 8 * 3 and paper["published"].notna().all()
    assert (paper["published_dataset"] == "OHSUMED (LETOR, cleaned)").all()
    # every published cell, ours beside the rows that ran
    assert set(paper.loc[paper["ours"].notna(), "system"]) == {f"{m} [first]" for m in methods if m != "RankSVM"}
    rng = np.random.default_rng(0)
    scores = pd.read_csv(run_dir(workdir, "SVMmap", 1, dataset="MQ2008", study="chakrabarti2008-fig9")
                         / "scores.test.tsv", sep="\t")
    random = np.mean([ndcg_at_10(g["label"].to_numpy(), rng.random(len(g))) for _, g in scores.groupby("qid")
                      for _ in range(5)])
    # 0.05 is over three standard errors of a mean over fold 1's 157 test queries; DORM, the
    # weakest here (as on TD2003 in the paper), clears it by less than the others
    ndcg = paper[paper["column"] == "NDCG@10"].set_index("row")["ours"].dropna()
    assert (ndcg > random + 0.05).all(), (ndcg, random)
    means = table[table["metric"] == "ndcg@10"].set_index("system")["mean"]
    assert len(means) == len(methods) and (means > random + 0.05).all(), (means, random)
    keys = set(fold_runs(workdir).query("level == 'fold'")["key"])
    assert {f"chakrabarti2008-fig9/MQ2008/first/{m}/fold1" for m in methods} <= keys
    assert "Chakrabarti" in (workdir / "results/tables/chakrabarti2008-fig9/MQ2008.md").read_text()


def test_huang_frey_fig4_study_renders_its_plots_and_table(tmp_path):
    """Figure 4's systems on tiny synthetic data (fewer epochs and restarts than the paper, one
    L1 bound): the NDCG@k and P@k plots and the table render, every system beats a random
    ranking, and every StructRank restart's curve is in MLflow."""
    from mlflow.tracking import MlflowClient
    from snakemake.utils import update_config

    workdir = make_workdir(tmp_path, {})
    config = yaml.safe_load((workdir / "test.yaml").read_text())
    update_config(config, yaml.safe_load((REPO / "config/studies/huang-frey2008-fig4.yaml").read_text()))
    update_config(config, {"folds": [1], "synthetic": {"n_queries": 40, "n_features": 17},
                           "report": {"n_resamples": 200}})
    config["run_methods"] = [m for m in config["run_methods"] if not m.endswith("-paper")]  # the literal recipe
    for name, spec in config["methods"].items():
        if spec["kind"] == "structrank":
            spec["params"].update(epochs=1 if "full" in name else 3, restarts=2)
            spec["grid"] = {"l1_bound": [50.0]}
    (workdir / "fig4.yaml").write_text(yaml.safe_dump(config))
    snakemake(workdir, configfile="fig4.yaml")
    for plot in ("ndcg_at_k", "p_at_k"):
        path = workdir / f"results/plots/huang-frey2008-fig4/synthetic.{plot}.png"
        assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    table = pd.read_csv(workdir / "results/tables/huang-frey2008-fig4/synthetic.csv")
    assert set(table["metric"]) == {"ndcg@1", "ndcg@5", "ndcg@10", "p@1", "p@5", "p@10", "map"}
    rng = np.random.default_rng(0)
    for method in config["run_methods"]:
        scores = pd.read_csv(run_dir(workdir, method, 1, study="huang-frey2008-fig4") / "scores.test.tsv", sep="\t")
        ours = np.mean([ndcg_at_10(g["label"].to_numpy(), g["score"].to_numpy()) for _, g in scores.groupby("qid")])
        rand = np.mean([ndcg_at_10(g["label"].to_numpy(), rng.random(len(g))) for _, g in scores.groupby("qid")
                        for _ in range(5)])
        assert ours > rand + 0.05, (method, ours, rand)
    runs = fold_runs(workdir).set_index("key")
    client = MlflowClient(tracking_uri=f"sqlite:///{workdir}/results/mlflow.db")
    run_id = runs.loc["huang-frey2008-fig4/synthetic/first/CDN-random/fold1", "id"]
    for restart in (0, 1):
        assert len(client.get_metric_history(run_id, f"restart{restart}_train_loss")) == 4  # start + 3 epochs


DUBEY_FIG3 = ["SVMmap", "RankBoost", "RankSVM", "MLE", "ExpGain_AUC", "ExpGain_MAP", "ExpGain_NDCG", "L3_AUC",
              "L3_MAP", "L3_NDCG", "ConvexLoss_AUC", "ConvexLoss_MAP", "ConvexLoss_NDCG"]


def test_dubey_sampler_studies_render(tmp_path):
    """The sampler studies (Figures 4-7) on tiny synthetic data render their plots and tables
    (Figure 3's methods run on real data: the test below)."""
    workdir = make_workdir(tmp_path, {})
    tiny = {"folds": [1], "synthetic": {"n_queries": 60, "n_features": 17}, "report": {"n_resamples": 200}}
    # a part of Figure 4's and 6's methods (each is the same code with another setting), Figure 4's
    # with ranknet beside: a method without the swept parameter, which the sweep must leave out
    run = {"dubey-fig4": ["ConvexLoss_NDCG_m10", "ConvexLoss_NDCG_m100", "ConvexLoss_NDCG_m400", "ranknet"],
           "dubey-fig6": ["ConvexLoss_NDCG_k0", "ConvexLoss_NDCG_k-20"]}
    for name in ("dubey-fig4", "dubey-fig5", "dubey-fig6", "dubey-fig7"):
        own = list(yaml.safe_load((REPO / f"config/studies/{name}.yaml").read_text())["methods"])
        config = study_config(workdir, name, {**tiny, "run_methods": run.get(name, own)}, "_fig3recipe")
        snakemake(workdir, *NO_MLFLOW, configfile=config)
    sweep = pd.read_csv(workdir / "results/tables/dubey-fig4/synthetic.sweep.csv")
    assert sweep["value"].tolist() == [10, 100, 400] and sweep["ndcg@10"].between(0, 1).all()
    assert len(pd.read_csv(workdir / "results/tables/dubey-fig5/synthetic.sweep.csv")) == 3
    # every published cell of Figure 6, ours beside those of the rows that ran
    fig6 = pd.read_csv(workdir / "results/tables/dubey-fig6/synthetic.paper.csv")
    assert len(fig6) == 10 and fig6["published"].notna().all()
    assert sorted(fig6.loc[fig6["ours"].notna(), "row"].astype(str).unique()) == ["-20", "0"]
    smear = pd.read_csv(workdir / "results/tables/dubey-fig7/synthetic.delta_smear.csv")
    assert set(smear["restart"]) == {"best", "middle", "worst"} and smear["count"].sum() > 0
    for plot in ("dubey-fig4/synthetic.sweep", "dubey-fig5/synthetic.sweep", "dubey-fig6/synthetic.sweep",
                 "dubey-fig7/synthetic.delta_smear"):
        assert (workdir / f"results/plots/{plot}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


# Figure 3's methods the test below runs: the baselines and the sampled models that no test fits
# on real OHSUMED; tests/test_conditional.py's real-OHSUMED test fits the other six
DUBEY_FIG3_RUN = ["SVMmap", "RankBoost", "RankSVM", "ExpGain_AUC", "L3_AUC", "L3_MAP", "L3_NDCG"]


def test_dubey_fig3_on_mq2008_every_method_beats_random(tmp_path, shared_data):
    """Figure 3's methods on real LETOR data (MQ2008 fold 1, cleaned as in the paper, one C):
    each one run beats a random ranking, has its fold run in MLflow (the non-convex ones with
    every restart's curve) and a row in the tables; the figure's layout has every published row."""
    from mlflow.tracking import MlflowClient

    workdir = make_workdir(tmp_path, {})
    snakemake(workdir, configfile=study_config(workdir, "dubey-fig3", {
        "datasets": ["MQ2008"], "data_root": str(shared_data), "folds": [1], "report": {"n_resamples": 200},
        "run_methods": DUBEY_FIG3_RUN}, "_fig3recipe"))
    table = pd.read_csv(workdir / "results/tables/dubey-fig3/MQ2008.csv")
    assert sorted(table["system"].unique()) == sorted(f"{m} [first]" for m in DUBEY_FIG3_RUN)
    rng = np.random.default_rng(0)
    scores = pd.read_csv(run_dir(workdir, "SVMmap", 1, dataset="MQ2008", study="dubey-fig3") / "scores.test.tsv",
                         sep="\t")
    random = np.mean([ndcg_at_10(g["label"].to_numpy(), rng.random(len(g))) for _, g in scores.groupby("qid")
                      for _ in range(5)])
    ndcg = table[table["metric"] == "ndcg@10"].set_index("system")["mean"]
    assert len(ndcg) == len(DUBEY_FIG3_RUN)
    assert (ndcg > random + 0.05).all(), (ndcg, random)
    runs = fold_runs(workdir).set_index("key")
    assert {f"dubey-fig3/MQ2008/first/{m}/fold1" for m in DUBEY_FIG3_RUN} <= set(runs.index)
    client = MlflowClient(tracking_uri=f"sqlite:///{workdir}/results/mlflow.db")
    run_id = runs.loc["dubey-fig3/MQ2008/first/L3_NDCG/fold1", "id"]
    for restart in range(3):
        assert client.get_metric_history(run_id, f"restart{restart}_train_loss")
        assert len(client.get_metric_history(run_id, f"restart{restart}_selection_value")) == 1
    paper = pd.read_csv(workdir / "results/tables/dubey-fig3/MQ2008.paper.csv")
    md = (workdir / "results/tables/dubey-fig3/MQ2008.paper.md").read_text()
    assert "Kendall" in md and "Microaverage" in md and md.count("### ") == 4
    assert set(paper["row"].dropna()) >= set(DUBEY_FIG3)


def test_a_run_killed_with_sigkill_finishes_on_the_next_start_with_the_clean_tables(tiny_run, tiny_copy):
    """kill -9 of the whole run (snakemake and its jobs) mid-training leaves a lock and
    half-written outputs; the bootstrap's next start removes the stale lock, reruns the
    incomplete jobs, and ends with the same tables and per-query metrics as a clean run. The
    killed run retrains a copy of the tiny run (--forcerun train), so the next start redoes only
    what the kill left incomplete and what follows from the models retrained before it."""
    import importlib.util
    import os
    import signal

    spec = importlib.util.spec_from_file_location("bootstrap", REPO / "setup" / "bootstrap.py")
    bootstrap = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bootstrap)
    clean, _ = tiny_run  # the module's clean run of the same config: no second clean run
    killed = tiny_copy
    models = list((killed / "results" / "runs").glob("**/model.json"))
    before = {path: path.stat().st_mtime_ns for path in models}

    cmd = [SNAKEMAKE, "--cores", "2", "--configfile", "test.yaml", "--replace-workflow-config", "--forcerun", "train"]
    proc = subprocess.Popen(cmd, cwd=killed, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    deadline = time.monotonic() + 300
    while not any(path.stat().st_mtime_ns != before[path] for path in models if path.exists()):
        assert proc.poll() is None and time.monotonic() < deadline, "the run ended before any model was saved"
        time.sleep(0.2)
    os.killpg(proc.pid, signal.SIGKILL)  # the run and every job it started, as a crash would
    proc.wait()
    assert any((killed / ".snakemake" / "locks").iterdir())
    with pytest.raises(AssertionError, match="--rerun-incomplete|cannot be locked"):
        snakemake(killed)  # what a user meets today without the bootstrap

    assert bootstrap.clear_stale_lock(killed, SNAKEMAKE, ["--configfile", "test.yaml"])
    snakemake(killed, "--rerun-incomplete")
    assert not bootstrap.clear_stale_lock(killed, SNAKEMAKE, [])  # nothing left to unlock
    table = "results/tables/default/synthetic.csv"
    assert (killed / table).read_text() == (clean / table).read_text()
    per_query = sorted(p.relative_to(clean) for p in (clean / "results/runs").glob("**/metrics.per_query.*.csv"))
    assert per_query and per_query == sorted(p.relative_to(killed)
                                             for p in (killed / "results/runs").glob("**/metrics.per_query.*.csv"))
    for path in per_query:
        assert (killed / path).read_text() == (clean / path).read_text(), path
    runs = fold_runs(killed).query("level == 'fold'")
    assert runs["key"].is_unique and len(runs) == 2 * 2 * 3  # feature sets x folds x methods


def test_a_scorecard_run_runs_its_studies_and_scores_every_published_cell(tmp_path):
    """A scorecard config with one member study on synthetic data, a published table of two cells
    (one far below ours, one far above) and a claim: the member runs through the CLI, the card has
    its verdicts, ours equals the member's own table, and a second run plans nothing."""
    workdir = make_workdir(tmp_path, {})
    (workdir / "ref.csv").write_text("table,row,column,metric,value,dataset\n"
                                     "1,RankNet,NDCG@10,NDCG@10,0.0,synthetic (a paper's run)\n"
                                     "1,RankNet,MAP,MAP,1.0,synthetic (a paper's run)\n"
                                     "1,RankNet,ERR,ERR,0.5,other data\n")
    (workdir / "claims.csv").write_text("table,claim,better,worse,metric,quote\n"
                                        "Fig 1,ranknet above pointwise,ranknet [first],pointwise [first],ndcg@10,q\n")
    member = {**TINY, "study": "member", "folds": [1, 2], "features": {**TINY["features"], "rho": []},
              "methods": {k: TINY["methods"][k] for k in ("pointwise", "ranknet")},
              "paper": {"reference": "ref.csv", "table": 1, "rows": {"RankNet": "ranknet"},
                        "columns": {"NDCG@10": "ndcg@10", "MAP": "map", "ERR": "err"}, "system": "{row} [first]"}}
    (workdir / "member.yaml").write_text(yaml.safe_dump(member))
    config = yaml.safe_load((workdir / "test.yaml").read_text())
    # protocol forensics: ranknet rerun with another normalisation, as a study of its own
    forensics = {"bases": {"member": ["ranknet"]},
                 "variants": {"querylevel": {"choice": "normalisation", "set": {"features": {"normalization": "querylevel"}}}}}
    config.update({"study": "card", "scorecard": {"studies": ["member.yaml"], "claims": {"member": "claims.csv"},
                                                  "n_resamples": 500, "forensics": forensics}})
    (workdir / "test.yaml").write_text(yaml.safe_dump(config))
    snakemake(workdir)
    card = pd.read_csv(workdir / "results/tables/scorecard.csv")
    cells = card[card["kind"] == "cell"].set_index("column")
    assert sorted(cells.index) == ["MAP", "NDCG@10"]  # ERR was published on other data
    assert cells.loc["NDCG@10", "verdict"] == "above" and cells.loc["MAP", "verdict"] == "below"
    table = pd.read_csv(workdir / "results/tables/member/synthetic.csv").set_index(["metric", "system"])
    for column, metric in (("NDCG@10", "ndcg@10"), ("MAP", "map")):
        row = cells.loc[column]
        assert row["ci_low"] <= row["ours"] <= row["ci_high"]
        assert row["ours"] == pytest.approx(table.loc[(metric, "ranknet [first]"), "mean"], abs=1e-12)
    claim = card[card["kind"] == "claim"].iloc[0]
    runs = {m: pd.read_csv(workdir / f"results/runs/member/synthetic/first/{m}/metrics.per_query.test.csv")
            for m in ("ranknet", "pointwise")}
    diff = (runs["ranknet"].set_index(["fold", "qid"])["ndcg@10"]
            - runs["pointwise"].set_index(["fold", "qid"])["ndcg@10"]).groupby("fold").mean().mean()
    assert claim["ours"] == pytest.approx(diff, abs=1e-12)
    assert claim["verdict"] == ("reproduced" if claim["ci_low"] > 0 else
                                "reversed" if claim["ci_high"] < 0 else "no difference")
    assert "of 2 published cells reproduced" in (workdir / "results/tables/scorecard.md").read_text()
    beyond = pd.read_csv(workdir / "results/tables/scorecard.beyond.csv")
    assert set(beyond["column"]) == {"NDCG@10", "MAP"} and beyond["paper_best_system"].eq("ranknet [first]").all()
    # the forensics: ours as configured is the card's number, the variant's is its own study's table
    moves = pd.read_csv(workdir / "results/tables/forensics.csv").set_index(["variant", "column"])
    variant = pd.read_csv(workdir / "results/tables/member.querylevel/synthetic.csv").set_index(["metric", "system"])
    assert member["features"]["normalization"] != "querylevel"
    for column, metric in (("NDCG@10", "ndcg@10"), ("MAP", "map")):
        assert moves.loc[("as-study", column), "ours"] == pytest.approx(cells.loc[column, "ours"], abs=1e-12)
        assert moves.loc[("querylevel", column), "ours"] == pytest.approx(
            variant.loc[(metric, "ranknet [first]"), "mean"], abs=1e-12)
    assert set(cells["closest_protocol"]) <= {"querylevel", "none closer"}
    assert (workdir / "results/tables/forensics.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    dry = snakemake(workdir, "--dry-run")
    assert "Nothing to be done" in dry.stdout + dry.stderr, dry.stdout


def test_an_extra_metric_is_added_without_training_and_dropped_without_evaluating(tmp_path):
    """evaluation.extra_metrics: adding one evaluates again (never trains) and its column appears
    in the per-query files; dropping it again re-evaluates nothing."""
    workdir = make_workdir(tmp_path, {
        "folds": [1], "synthetic": {"n_queries": 60, "n_features": 17}, "features": {"normalization": "zscore"},
        "methods": {m: {"kind": "linear", "params": {"loss": m}} for m in ("pointwise_mse", "ranknet")},
        "report": {"baseline": "ranknet", "metrics": ["ndcg@10"], "n_resamples": 100}})
    snakemake(workdir)
    added = snakemake(workdir, "--config", "evaluation={extra_metrics: [err@5]}")
    counts = job_counts(added.stdout + added.stderr)
    assert "train" not in counts and counts["evaluate"] == 2
    fold = pd.read_csv(run_dir(workdir, "ranknet", 1) / "metrics.per_query.test.csv")
    method = pd.read_csv(run_dir(workdir, "ranknet", 1).parent / "metrics.per_query.test.csv")
    assert fold["err@5"].between(0, 1).all() and "err@5" in method.columns
    dropped = job_counts(snakemake(workdir, "--dry-run").stdout)
    # the tables job's params name the metrics (and log_runs', the view's columns); no fold is evaluated
    assert dropped == {"tables": 1, "log_runs": 1, "all": 1}
