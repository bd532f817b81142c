"""The job counts the pages give, held to what Snakemake plans (issue 45.5: figures that drifted
from the pipeline, "about 50 jobs" where 36 ran). The tutorial's are checked beside its run,
tests/test_docs_tutorial_e2e.py."""

from __future__ import annotations

import re
from pathlib import Path

from pipeline_runs import job_counts, make_workdir, snakemake

DOCS = Path(__file__).resolve().parents[1] / "docs"


def test_the_default_runs_job_count_is_what_snakemake_plans(tmp_path):
    """getting-started.md's jobs of the default pipeline (config/config.yaml as it is), and the
    steps Snakemake's progress line counts (its target rule `all` is one more)."""
    text = " ".join((DOCS / "getting-started.md").read_text().split())
    jobs = int(re.search(r"most of it the (\d+) jobs of the default pipeline", text)[1])
    steps = int(re.search(r"Snakemake's progress line counts (\d+) steps", text)[1])
    counts = job_counts(snakemake(make_workdir(tmp_path, {}), "--dry-run").stdout)
    assert counts.pop("all") == 1
    assert (sum(counts.values()), sum(counts.values()) + 1) == (jobs, steps), counts
