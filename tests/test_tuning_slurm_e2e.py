"""Tuning beyond one machine, for real: the SLURM profile on the local one-node cluster runs a
method's two tuning workers as two SLURM jobs sharing one Optuna study in PostgreSQL (the
optuna database that setup/cluster/mlflow-server.sh starts and exports as
RANKSTUDY_TUNE_STORAGE), and the train job fits the study's best trial.

Skips without a cluster or PostgreSQL, or fails when CI requires them (RANKSTUDY_REQUIRE_SLURM,
RANKSTUDY_REQUIRE_SERVER)."""

from __future__ import annotations

import json
import re
import shutil
from collections import Counter
from pathlib import Path

import pytest

from clusters import SUBMITTED, server, slurm_cluster  # noqa: F401 - the fixtures
from pipeline_runs import make_workdir, run_dir, snakemake
from tuningcheck import TUNED

# one SLURM test at a time: on the worker of the other cluster tests
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("tiny_base")]


def test_two_slurm_workers_share_one_study_in_postgresql(slurm_cluster, server, tmp_path, monkeypatch):  # noqa: F811
    optuna = pytest.importorskip("optuna")
    env, _ = server
    monkeypatch.setenv("RANKSTUDY_TUNE_STORAGE", env["RANKSTUDY_TUNE_STORAGE"])
    workdir = make_workdir(tmp_path, TUNED)
    # a SLURM job merges test.yaml over config/config.yaml (Snakemake 9 does not pass
    # --replace-workflow-config on): both the same config (tests/test_slurm_e2e.py says why)
    shutil.copy(workdir / "test.yaml", workdir / "config" / "config.yaml")
    target = str(run_dir(Path("."), "lambdamart", 1, study="tuned") / "fit.json")
    out = snakemake(workdir, target, "--profile", "profiles/slurm", "--slurm-init-seconds-before-status-checks", "2",
                    "--seconds-between-status-checks", "2")
    submitted = Counter(re.search(r"/(?:rule_(\w+?)|group_([a-z]+)_\w+)/", path).group(1) or "group"
                        for _, path in SUBMITTED.findall(out.stdout + out.stderr))
    assert submitted["tune_trials"] == 2, submitted
    fit = json.loads((run_dir(workdir, "lambdamart", 1, study="tuned") / "fit.json").read_text())
    assert fit["tuning"]["trials"] == TUNED["tune"]["trials"]
    assert not (workdir / "results/tuning").exists()  # no journal: the database held the study
    study = optuna.load_study(study_name=fit["tuning"]["study"], storage=env["RANKSTUDY_TUNE_STORAGE"])
    finished = [t for t in study.trials if t.user_attrs.get("state") == "complete"]
    assert len(finished) >= TUNED["tune"]["trials"]
    assert {t.user_attrs["worker"] for t in finished} == {1, 2}, "both SLURM jobs ran trials"
    assert max(t.value for t in finished) == pytest.approx(fit["selection_score"])
