"""A tuning study's storage under faults, for real against Optuna's journal file: a journal cut
mid-line by a crash is repaired (nothing that can be kept is lost), one deleted while a study
runs is one line naming it, a full disk under it names the journal, a password in a storage URL
never shows, whatever its form (issue 45), and on a database Optuna's own heartbeat finds a trial
whose worker on another host stopped (issue 44)."""

from __future__ import annotations

import errno
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from rankercheck import make_data
from rankstudy.pipeline.jobs import no_space_message
from rankstudy.selection.settings import TuneSettings
from rankstudy.selection.tuning import tune_and_fit, tuning_space
from rankstudy.selection import tuning_storage
from rankstudy.selection.tuning_storage import StorageError, masked, open_storage, repair_journal, shown_storage

pytest.importorskip("optuna")

TRAIN, VALI = make_data(40, 1), make_data(20, 2)
METRIC, OPTIONS = "ndcg@10", {"rel_threshold": 1, "no_relevant": "zero", "max_label": 4.0}


@pytest.fixture(autouse=True)
def toy_kind(monkeypatch):
    from rankstudy.rankers.registry import RANKERS
    from tuningcheck import ToyRanker

    monkeypatch.setitem(RANKERS, "toy", ToyRanker)


def tune(journal, trials, params=None, lines=None, name="s/d/f/toy/fold1#x"):
    params = params or {"seed": 0}
    return tune_and_fit("toy", params, tuning_space("toy", params), TRAIN, VALI, metric=METRIC, metric_options=OPTIONS,
                        settings=TuneSettings(sampler="random", trials=trials), storage=str(journal),
                        name=name, progress=(lines.append if lines is not None else lambda _: None))


# a worker on another host: its trial says nothing our liveness check reads (no host, no pid), so
# only Optuna's heartbeat, kept while study.optimize runs the trial, can tell that it stopped
ELSEWHERE = """
import sys, time, optuna
storage = optuna.storages.RDBStorage(sys.argv[1], heartbeat_interval=1, grace_period=2)
study = optuna.create_study(study_name=sys.argv[2], storage=storage, direction="maximize")
def objective(trial):
    print("started", flush=True)
    time.sleep(600)
study.optimize(objective, n_trials=1)
"""


def test_on_a_database_optunas_heartbeat_finds_a_trial_whose_worker_stopped(tmp_path, monkeypatch):
    monkeypatch.setattr(tuning_storage, "HEARTBEAT_SECONDS", 1)
    monkeypatch.setattr(tuning_storage, "STALE_SECONDS", 2)
    url, name = f"sqlite:///{tmp_path / 'tuning.db'}", "s/d/f/toy/fold1#db"
    script = tmp_path / "elsewhere.py"
    script.write_text(ELSEWHERE)
    worker = subprocess.Popen([sys.executable, str(script), url, name], stdout=subprocess.PIPE, text=True)
    assert worker.stdout.readline().strip() == "started"
    time.sleep(1.5)  # a heartbeat recorded
    os.kill(worker.pid, signal.SIGKILL)
    worker.wait()
    lines, out = [], []
    # without the heartbeat the choice would wait for that trial for ever: bounded here
    run = threading.Thread(target=lambda: out.append(tune(url, 3, lines=lines, name=name)), daemon=True)
    run.start()
    run.join(120)
    assert out, "tuning still waits for the stopped worker's trial"
    assert "tuning: trial 1 was lost (its worker None stopped)" in lines, lines
    assert [r["state"] for r in out[0].rows] == ["lost", "complete", "complete", "complete"], lines
    assert out[0].summary["lost"] == 1 and out[0].summary["trials"] == 3


def test_a_journal_cut_mid_line_is_repaired_and_the_study_resumes(tmp_path):
    journal = tmp_path / "fold1.journal"
    first = tune(journal, 3)
    whole = journal.read_bytes()
    with open(journal, "ab") as f:  # a crash mid-write: half an operation, no newline
        f.write(b'{"op_code":5,"worker_id":"abc","trial_id":3,"par')
    lines = []
    again = tune(journal, 5, lines=lines)
    repaired = [line for line in lines if line.startswith("tuning: repaired the journal")]
    assert len(repaired) == 1 and str(journal) in repaired[0] and "a last line cut mid-write" in repaired[0]
    assert journal.read_bytes().startswith(whole)
    backups = list(tmp_path.glob("fold1.journal.damaged-*"))
    assert len(backups) == 1 and backups[0].read_bytes().startswith(b'{"op_code":5')
    assert [r["vali.ndcg@10"] for r in again.rows[:3]] == [r["vali.ndcg@10"] for r in first.rows]
    assert again.summary["trials"] == 5


def test_a_cut_operation_run_into_the_next_one_is_mended(tmp_path):
    """Without the repair, the next writer appends to the cut line: Optuna then fails on every
    read with a JSONDecodeError traceback. The whole operation after the cut is kept."""
    journal = tmp_path / "fold1.journal"
    tune(journal, 2)
    lines = journal.read_bytes().split(b"\n")
    damaged = b"\n".join([*lines[:-3], b'{"op_code":4,"wor' + lines[-3], *lines[-2:]])
    journal.write_bytes(damaged)
    import optuna
    from optuna.storages.journal import JournalFileBackend

    with pytest.raises(ValueError):  # what Optuna itself does with it
        optuna.storages.JournalStorage(JournalFileBackend(str(journal))).get_all_studies()
    said = []
    repair_journal(str(journal), said.append)
    assert "1 operation(s) cut mid-write" in said[0]
    assert journal.read_bytes().split(b"\n") == lines
    assert len(tune(journal, 2).rows) == 2


def test_a_line_that_cannot_be_read_sets_the_rest_aside(tmp_path):
    journal = tmp_path / "fold1.journal"
    tune(journal, 2)
    lines = journal.read_bytes().split(b"\n")
    journal.write_bytes(b"\n".join([lines[0], b"garbage", *lines[1:]]))
    said = []
    repair_journal(str(journal), said.append)
    assert "everything from line 2 on" in said[0]
    assert journal.read_bytes() == lines[0] + b"\n"
    assert b"garbage" in next(tmp_path.glob("fold1.journal.damaged-*")).read_bytes()


def test_a_journal_deleted_while_the_study_runs_is_one_line_naming_it(tmp_path):
    journal = tmp_path / "fold1.journal"

    def delete_soon():
        time.sleep(0.3)
        journal.unlink()

    threading.Thread(target=delete_soon, daemon=True).start()
    with pytest.raises(StorageError, match=rf"^the tuning journal {journal} was deleted while the study ran"):
        tune(journal, 4, params={"seed": 0, "sleep": 0.4})


def test_a_full_disk_under_the_journal_names_the_journal(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("mounting a small file system needs root")
    disk = tmp_path / "disk"
    disk.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=128k", "tmpfs", str(disk)], capture_output=True).returncode:
        pytest.skip("cannot mount a tmpfs here")
    try:
        journal = disk / "fold1.journal"
        tune(journal, 1)
        filler = disk / "filler"
        with open(filler, "wb", buffering=0) as f:  # every byte left
            try:
                while True:
                    f.write(b"\0" * 512)
            except OSError:
                pass
        with pytest.raises(OSError) as caught:
            tune(journal, 6)
        assert caught.value.errno == errno.ENOSPC and caught.value.filename == str(journal)

        class Job:
            output = [str(tmp_path / "model.json")]
            config = {}

        assert no_space_message(caught.value, Job).startswith(f"cannot write {journal}: no space left on the device")
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=False)


@pytest.mark.parametrize("url", [
    "postgresql://u:s3cret@127.0.0.1:1/db",
    "postgresql://u@127.0.0.1:1/db?password=s3cret",
    "postgresql://127.0.0.1:1/db?user=u&password=s3cret&sslmode=disable",
    "postgresql://u:s3cr%40t@127.0.0.1:1/db",
])
def test_a_storage_password_never_shows(url):
    assert "s3cr" not in shown_storage(url) and "***" in shown_storage(url)
    assert "s3cr" not in masked(f"could not connect to {url}: FATAL", url)
    with pytest.raises(StorageError) as caught:
        open_storage(url)
    assert "s3cr" not in str(caught.value)


def test_a_journal_lock_left_by_a_killed_worker_is_released_after_its_grace(tmp_path, monkeypatch):
    """A worker killed while it held the journal's lock (kill -9 of Snakemake, the end-with-
    Snakemake watch) leaves Optuna's lock link beside the journal. The rerun took it for a live
    writer's for ever when the journal's path was relative (the link's target then resolved from
    its own folder, so Optuna's grace period never ran out): a relative path in a folder, as the
    pipeline's results/tuning/... are. Now the lock is on the absolute path and released after
    LOCK_GRACE_SECONDS without a write."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(tuning_storage, "LOCK_GRACE_SECONDS", 3)
    journal = Path("tuning") / "fold1.journal"
    tune(journal, 1)
    # the link a killed writer leaves (Optuna's symlink lock, made on the path it was given)
    os.symlink(os.path.abspath(journal), str(journal) + ".lock")
    out = []
    run = threading.Thread(target=lambda: out.append(tune(journal, 2)), daemon=True)
    run.start()
    run.join(20)  # Optuna's own 30 s grace would not do either
    assert out, "the rerun still waits for the dead writer's lock"
    assert out[0].summary["trials"] == 2 and not os.path.lexists(str(journal) + ".lock")
