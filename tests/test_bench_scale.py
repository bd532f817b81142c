"""The scale benchmark end to end at its smoke-test size: the real snakemake CLI, every rule's
benchmark file in the table, float32 feature storage through the whole pipeline, and LightGBM's
train jobs on one thread (the tiny split is far below PARALLEL_MIN_MB)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from rankstudy.data.registry import load_registry
from rankstudy.pipeline import layout

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[1]


def run_protocol(workdir: Path) -> layout.Protocol:
    """The data, cleaning and norm names of the benchmark's run, read from the files it wrote
    (scale.yaml, the registry it copied): tests import nothing from benchmarks/."""
    config = yaml.safe_load((workdir / "scale.yaml").read_text())
    entry = load_registry(workdir / "config" / "datasets.yaml")["synthetic"]
    return layout.protocol("synthetic", entry, config)


def test_tiny_scale_run_tabulates_every_rule_and_a_continued_run_sums_its_calls(tmp_path):
    """One benchmark run at the smoke-test size (float32 features, the prepared splits as temp
    files), then the same call again (nothing left to run: a continued run) and the report alone
    after both calls' record is gone."""
    workdir = tmp_path / "scale"
    cmd = [sys.executable, str(REPO / "benchmarks/bench_scale.py"), "--size", "tiny", "--methods", "ranknet",
           "lambdamart", "--dtype", "float32", "--drop-prepared", "--workdir", str(workdir)]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    table = pd.read_csv(workdir / "scale.csv").set_index("rule")
    assert {"fetch_dataset", "parse_fold", "clean_fold", "pair_correlations", "featurize", "train", "evaluate", "aggregate",
            "tables"} <= set(table.index)
    assert table.loc["train", "jobs"] == 2 * 2 and table.loc["featurize", "jobs"] == 2
    # fetch_dataset has nothing to fetch for synthetic data and clean_fold nothing to drop at this size (0.03 s
    # a job): either may end before Snakemake samples its memory (clean_fold's 0 MB on a fast machine, 2026-12-08)
    assert (table.drop(index=["fetch_dataset", "clean_fold"])["max_rss_mb"] > 0).all()
    assert (table["wall_s_sum"] > 0).all()
    protocol = run_protocol(workdir)
    with np.load(workdir / layout.fill(layout.FEATURES, featureset="first", fold=1, split="train",
                                       **protocol.keys())) as z:
        assert z["X"].dtype == np.float32
    log = (workdir / layout.log("train").format(study="scale-tiny", dataset="synthetic", featureset="first",
                                                method="lambdamart", fold=1)).read_text()
    assert "threads: 1" in log.splitlines()[0]
    report = (workdir / "scale.md").read_text()
    assert "Whole run:" in report and "s wall" in report and "in one call" in report
    # the per-query metrics of the float32 run are real numbers for every test query
    per_query = pd.read_csv(workdir / layout.fill(layout.METHOD_PER_QUERY, study="scale-tiny", dataset="synthetic",
                                                  featureset="first", method="ranknet"))
    assert len(per_query) > 0 and per_query["ndcg@10"].between(0, 1).all()
    # the prepared splits were temp files, gone now, but their sizes were seen during the run
    keys = protocol.keys()
    assert not (workdir / layout.fill(layout.PARSED, fold=1, split="train", **keys)).exists()
    assert not (workdir / layout.fill(layout.CLEANED, fold=1, split="train", **keys)).exists()
    assert table.loc["parse_fold", "input_mb_of_max_rss_job"] > 0

    second = subprocess.run(cmd, capture_output=True, text=True, timeout=900)  # nothing left to run
    assert second.returncode == 0, second.stdout[-3000:] + second.stderr[-3000:]
    assert "summed over 2 calls (a continued run)" in (workdir / "scale.md").read_text()
    # as if both calls had been killed: no call recorded, so no whole-run figure
    (workdir / "scale.run.json").unlink()
    report = subprocess.run(cmd + ["--report-only"], capture_output=True, text=True, timeout=300)
    assert report.returncode == 0, report.stderr[-3000:]
    assert "Whole run: not measured" in report.stdout
