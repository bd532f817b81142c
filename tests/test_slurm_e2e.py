"""The workflow on a SLURM cluster through Snakemake's SLURM executor (profiles/slurm):
a reduced default pipeline run once on this machine and once through SLURM gives the same
per-query metrics, and SLURM's accounting shows that its jobs ran every step but the local
download. The cluster's daemons on this machine listen on 127.0.0.1 only.

Needs a cluster that answers `sinfo` (with accounting: the executor asks `sacct` for its jobs);
`bash setup/cluster/local-slurm.sh start` makes a one-node one on this machine. Without one the
tests are skipped, or fail when RANKSTUDY_REQUIRE_SLURM=1 (CI starts the cluster and sets it)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections import Counter
from pathlib import Path

import pytest

from clusters import SUBMITTED, slurm_cluster  # noqa: F401 - the fixture
from pipeline_runs import TINY, job_counts, make_workdir, snakemake

# on the worker that holds the session's tiny run (tests/conftest.py): the cluster's run is compared
# with it, and the one-node cluster is used by one test at a time
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("tiny_base")]



def settings(conf: Path) -> dict[str, str]:
    """A SLURM configuration file's Key=Value lines (one setting a line, as local-slurm.sh writes)."""
    return dict(line.split("=", 1) for line in conf.read_text().splitlines()
                if "=" in line and not line.lstrip().startswith("#"))


def listening_addresses() -> dict[int, set[str]]:
    """What `ss -ltn` shows listening on this machine: port -> local addresses."""
    out = subprocess.run(["ss", "-ltnH"], capture_output=True, text=True, timeout=30, check=True)
    found: dict[int, set[str]] = {}
    for line in out.stdout.splitlines():
        addr, port = line.split()[3].rsplit(":", 1)
        found.setdefault(int(port), set()).add(addr)
    return found


def test_the_cluster_listens_on_127_0_0_1_only(slurm_cluster):
    """setup/cluster/local-slurm.sh's daemons take TCP connections on 127.0.0.1 only: slurmctld,
    slurmd and slurmdbd (CommunicationParameters=No*InAddrAny in slurm.conf and slurmdbd.conf) and
    the accounting database (MariaDB, --bind-address); munged has a unix socket only. Any other
    cluster has none of its daemons here, and nothing here listens on its ports but on 127.0.0.1."""
    conf = Path(os.environ.get("SLURM_CONF", "/etc/slurm/slurm.conf"))
    slurm = settings(conf) if conf.is_file() else {}  # none here: a configless site
    ports = {int(slurm.get("SlurmctldPort", 6817)): "slurmctld", int(slurm.get("SlurmdPort", 6818)): "slurmd",
             int(slurm.get("AccountingStoragePort", 6819)): "slurmdbd"}
    ours = conf.is_file() and conf.read_text().startswith(("# Written by setup/cluster/local-slurm.sh",
                                                           "# Written by workflow/cluster/local-slurm.sh"))  # or before it moved
    if ours:
        ports[int(os.environ.get("RANKSTUDY_SLURM_DB_PORT", 3307))] = "MariaDB"  # as the script's
    found = listening_addresses()
    where = {name: found.get(port, set()) for port, name in ports.items()}
    if ours:
        assert where == {name: {"127.0.0.1"} for name in ports.values()}, f"`ss -ltn`: {where}"
    else:
        assert all(addrs <= {"127.0.0.1"} for addrs in where.values()), f"`ss -ltn`: {where}"


# The cluster runs fold 1 of the tiny study for one method (every rule and feature set; 7 SLURM
# jobs, where all three methods took 14 and both folds 21; each job starts a snakemake of its own):
# its fold files are compared with the local run's.
CLUSTER_FOLDS, CLUSTER_METHODS = [1], ["ranknet"]


def workdir_of_the_tiny_run(tmp: Path) -> Path:
    """A copy of the workflow whose default config is the tiny one, on CLUSTER_FOLDS. Snakemake 9
    does not pass --replace-workflow-config (which the runner uses) on to the jobs it submits: a
    SLURM job merges test.yaml over config/config.yaml, so both must be the same config for the
    job to see what the submitting snakemake saw (other methods, merged method parameters)."""
    workdir = make_workdir(tmp, {**TINY, "folds": CLUSTER_FOLDS, "run_methods": CLUSTER_METHODS})
    shutil.copy(workdir / "test.yaml", workdir / "config" / "config.yaml")
    return workdir


@pytest.fixture(scope="module")
def local_and_slurm_runs(slurm_cluster, request, tmp_path_factory):
    # the local run is the session's tiny run (tests/conftest.py), asked for once a cluster answers
    local, local_out = request.getfixturevalue("tiny_base")
    cluster = workdir_of_the_tiny_run(tmp_path_factory.mktemp("slurm"))
    # the profile as a user names it, relative to the copy of the workflow; successful jobs'
    # SLURM logs are kept to be looked at here; SLURM is asked every 2 s rather than the profile's
    # 10 s (the jobs take seconds; each step of the chain waited a look for nothing)
    cluster_out = snakemake(cluster, "--profile", "profiles/slurm", "--slurm-keep-successful-logs",
                            "--slurm-init-seconds-before-status-checks", "2", "--seconds-between-status-checks", "2")
    return local, local_out, cluster, cluster_out


def per_query_files(workdir: Path) -> dict[str, bytes]:
    return {str(p.relative_to(workdir)): p.read_bytes()
            for p in sorted((workdir / "results/runs").rglob("metrics.per_query.test.csv"))}


def test_per_query_metrics_are_the_same_on_slurm_as_locally(local_and_slurm_runs):
    local, _, cluster, _ = local_and_slurm_runs
    folds = [f"/fold{k}/" for k in CLUSTER_FOLDS]
    ours = {name: data for name, data in per_query_files(local).items()
            if any(f in name for f in folds) and any(f"/{m}/" in name for m in CLUSTER_METHODS)}
    theirs = per_query_files(cluster)
    # every (feature set, method) on the cluster's fold, and its folds together (one fold here)
    per_fold = 2 * len(CLUSTER_METHODS)
    assert len(ours) == len(CLUSTER_FOLDS) * per_fold and len(theirs) == len(ours) + per_fold
    theirs = {name: data for name, data in theirs.items() if any(f in name for f in folds)}
    assert sorted(theirs) == sorted(ours)
    different = [name for name in ours if theirs[name] != ours[name]]
    assert not different, f"per-query metrics differ between the local and the SLURM run: {different}"
    for ext in ("csv", "md"):
        assert (cluster / f"results/tables/default/synthetic.{ext}").stat().st_size > 0


def test_slurm_ran_every_job_but_the_download(local_and_slurm_runs):
    _, local_out, cluster, cluster_out = local_and_slurm_runs
    log = cluster_out.stdout + cluster_out.stderr
    run_id = re.search(r"SLURM run ID: (\S+)", log).group(1)
    submitted = SUBMITTED.findall(log)
    # what ran where: SLURM's log of each job sits under .snakemake/slurm_logs/rule_<rule>/, or
    # group_<group>_<its rules>/ for the profile's group jobs (one SLURM job each)
    per_job = Counter(re.search(r"/(?:rule_(\w+?)|group_([a-z]+)_\w+)/", path).group(1, 2) for _, path in submitted)
    per_job = Counter({rule or group: n for (rule, group), n in per_job.items()})
    # what the cluster's run planned (the local run's plan, on the cluster's folds)
    expected = job_counts(log)
    assert expected["train"] == len(CLUSTER_FOLDS) * 2 * len(CLUSTER_METHODS) and expected["parse_fold"] == len(CLUSTER_FOLDS)
    assert expected.keys() == job_counts(local_out.stdout + local_out.stderr).keys()
    del expected["all"], expected["fetch_dataset"]  # a target, and a local rule (the download)
    # the profile's groups: a fold's preparation is one SLURM job, a training with its evaluation another
    groups = {"prepare": ("parse_fold", "clean_fold", "featurize", "pair_correlations"), "fit": ("train", "evaluate")}
    assert expected["train"] == expected["evaluate"]
    folds = expected["parse_fold"]
    fits = expected["train"]
    for members in groups.values():
        for rule in members:
            del expected[rule]
    expected.update(prepare=folds, fit=fits)
    assert per_job == expected
    # and every member job of every group ran: the benchmark file of each job is there
    assert len(list((cluster / "results/benchmarks/train").rglob("*.tsv"))) == fits
    assert len(list((cluster / "results/benchmarks/evaluate").rglob("*.tsv"))) == fits
    for _, path in submitted:
        assert Path(path).is_file() and Path(path).is_relative_to(cluster / ".snakemake/slurm_logs"), path
    # SLURM's accounting has every job, named after the run, completed
    ids = [job_id for job_id, _ in submitted]
    acct = subprocess.run(["sacct", "-X", "-n", "-P", "-o", "JobIDRaw,JobName,State", "-j", ",".join(ids)],
                          capture_output=True, text=True, timeout=60, check=True)
    rows = {job_id: (name, state) for job_id, name, state in
            (line.split("|") for line in acct.stdout.splitlines() if line)}
    assert sorted(rows) == sorted(ids)
    assert {name for name, _ in rows.values()} == {run_id}
    assert {state for _, state in rows.values()} == {"COMPLETED"}
