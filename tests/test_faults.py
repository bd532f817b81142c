"""Faults and inputs a user met, each with a clear message naming the file, line or key, and
before any job where it can be known."""

from __future__ import annotations

import errno
import importlib.util
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
import yaml

from rankstudy.data import registry as datasets
from rankstudy.data.folds import EmptySplitError, Fold, clean, load_fold
from rankstudy.data.rankdata import RankData
from rankstudy.pipeline.config import ConfigError, check_config
from rankstudy.pipeline.jobs import job_logging
from rankstudy.util.memory import memory_symptom

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture
def config():
    return yaml.safe_load((REPO / "config/config.yaml").read_text())


def split(labels, n_features=2, qid0=0) -> RankData:
    labels = np.asarray(labels, dtype=float)
    n = len(labels)
    return RankData(X=np.ones((n, n_features)), y=labels, qid=np.repeat([qid0], n), docid=np.arange(n),
                    offsets=np.array([0, n]))


def test_every_label_zero_ends_at_the_cleaning_with_what_it_removed():
    fold = Fold({"train": split([0, 0, 0]), "vali": split([0, 0], qid0=1), "test": split([0, 0], qid0=2)}, 2.0)
    with pytest.raises(EmptySplitError, match=r"no query in the train split\(s\) .*'train.queries_without_relevant': 1"
                                              r".*label >= 1 \(evaluation.rel_threshold\)"):
        clean(fold, {"drop_no_relevant": ["train"]}, 1)


def test_a_training_split_narrower_than_vali_and_test_is_widened(tmp_path):
    """No n_features in the entry: each file's width is its largest feature index."""
    folder = tmp_path / "Toy" / "Fold1"
    folder.mkdir(parents=True)
    (folder / "train.txt").write_text("2 qid:1 1:0.5 3:0.1\n0 qid:1 1:0.2 2:0.3\n")
    for s, q in (("vali", 2), ("test", 3)):
        (folder / f"{s}.txt").write_text(f"1 qid:{q} 1:0.5 46:0.1\n0 qid:{q} 2:0.2\n")
    entry = datasets.validate_entry("Toy", {"source": "local", "labels": [0, 2], "folds": 1,
                                            "layout": "Fold{fold}/{split}.txt"})
    lines = []
    fold = load_fold("Toy", {"name": "Toy", "source": "local", "root": "Toy", "entry": entry}, 1,
                     progress=lines.append, data_root=tmp_path)
    assert {s: d.n_features for s, d in fold.splits.items()} == {"train": 46, "vali": 46, "test": 46}
    assert fold.splits["train"].X[0, :3].tolist() == [0.5, 0.0, 0.1] and not fold.splits["train"].X[:, 3:].any()
    assert any("widened to 46" in line for line in lines)


def test_second_order_features_of_a_very_wide_data_set_are_refused_before_any_job(config, tmp_path):
    (tmp_path / "wide.yaml").write_text(yaml.safe_dump({"Wide": {
        "source": "local", "labels": [0, 2], "folds": 1, "n_features": 100000, "layout": "{split}.txt"}}))
    (tmp_path / "data" / "Wide").mkdir(parents=True)
    for split in ("train", "vali", "test"):
        (tmp_path / "data" / "Wide" / f"{split}.txt").touch()
    config.update(datasets=["Wide"], folds=[1], registry_extra=str(tmp_path / "wide.yaml"),
                  data_root=str(tmp_path / "data"))
    with pytest.raises(ConfigError, match=r"features.rho: data set 'Wide' has 100000 features.*GiB.*rho: \[\]"):
        check_config(config, REPO)
    config["features"]["rho"] = []
    check_config(config, REPO)


def test_a_report_metric_the_evaluation_does_not_compute_is_refused(config):
    config["report"]["metrics"] = ["ndcg@10", "err", "ndcg@7"]
    config["evaluation"]["metrics"] = ["map"]
    with pytest.raises(ConfigError, match=r"report.metrics: err not computed.*add it to evaluation.metrics"):
        check_config(config, REPO)
    config["evaluation"]["metrics"] = ["map", "err"]  # ndcg@7 is always computed (the NDCG@k plot)
    check_config(config, REPO)


class FakeJob:
    def __init__(self, tmp_path):
        self.log, self.wildcards, self.threads = [str(tmp_path / "job.log")], {"fold": "1"}, 1


def test_a_folder_the_job_cannot_write_gets_one_line_saying_so(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(sys, "stderr", sys.stderr)
    with pytest.raises(SystemExit):
        with job_logging(FakeJob(tmp_path), "train"):
            raise PermissionError(errno.EACCES, "Permission denied", "results/runs/x/fold1/model.json")
    err = capsys.readouterr().err
    assert "rankstudy train: cannot write results/runs/x/fold1/model.json: permission denied" in err


def chained(outer: BaseException, inner: BaseException) -> BaseException:
    """``outer`` raised while handling ``inner``, as llvmlite raises its 'Could not find/load'."""
    try:
        try:
            raise inner
        except type(inner):
            raise outer
    except type(outer) as exc:
        return exc


@pytest.mark.parametrize("exc", [MemoryError(), OSError(errno.ENOMEM, "Cannot allocate memory"),
                                 RuntimeError("can't start new thread"),
                                 chained(OSError("Could not find/load shared object file 'libllvmlite.so'"),
                                         OSError("libllvmlite.so: failed to map segment from shared object"))])
def test_running_out_of_memory_says_so(exc, tmp_path, capsys, monkeypatch):
    assert memory_symptom(exc) is not None
    monkeypatch.setattr(sys, "stderr", sys.stderr)
    with pytest.raises(SystemExit):
        with job_logging(FakeJob(tmp_path), "train"):
            raise exc
    assert "rankstudy train: out of memory" in capsys.readouterr().err


def test_a_library_that_is_really_missing_is_not_called_out_of_memory():
    assert memory_symptom(chained(OSError("Could not find/load shared object file 'libllvmlite.so'"),
                                  OSError("libllvmlite.so: cannot open shared object file: No such file"))) is None


# A job script as Snakemake runs it (its `snakemake` object in __main__), whose address space is
# then limited to what it already uses plus HEADROOM_MB: too little to map numpy's or numba's
# shared libraries.
JOB_UNDER_A_LIMIT = """
    import resource, types
    snakemake = types.SimpleNamespace(rule="{rule}", log=[], wildcards={{}}, threads=1, config={{}},
                                      resources=types.SimpleNamespace(mem_mb=1000))
    {before}
    vm_size = next(int(line.split()[1]) * 1024 for line in open("/proc/self/status") if line.startswith("VmSize:"))
    resource.setrlimit(resource.RLIMIT_AS, (vm_size + {headroom_mb} * 2**20,) * 2)
    {after}
"""


def run_job_under_a_limit(tmp_path, rule: str, before: str, after: str, headroom_mb: int):
    script = tmp_path / f"{rule}.py"
    script.write_text(textwrap.dedent(JOB_UNDER_A_LIMIT).format(rule=rule, before=before, after=after,
                                                                headroom_mb=headroom_mb))
    return subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)


def test_numba_failing_to_load_in_a_job_under_a_memory_limit_says_out_of_memory(tmp_path):
    """What users saw as "Could not find/load shared object file 'libllvmlite.so'"."""
    pytest.importorskip("numba")
    # a job script has loaded numpy before its job starts (job_logging alone no longer does)
    job = run_job_under_a_limit(tmp_path, "train", before="import numpy; from rankstudy.pipeline.jobs import job_logging",
                                after='with job_logging(snakemake, "train"): from rankstudy.data import letor_numba',
                                headroom_mb=64)
    assert job.returncode == 1
    assert "rankstudy train: out of memory: the train job failed with" in job.stderr
    assert "address-space limit (ulimit -v)" in job.stderr and "--set-resources train:mem_mb=N" in job.stderr
    assert "Traceback" not in job.stderr


def test_numpy_failing_to_load_before_the_job_starts_says_out_of_memory(tmp_path):
    """The imports at the top of a job script run before job_logging: rankstudy's first import
    makes an uncaught memory error end with the message all the same (here the parser's imports,
    pandas among them, which job_logging itself no longer loads)."""
    job = run_job_under_a_limit(tmp_path, "parse_fold", before="import rankstudy",
                                after="from rankstudy.pipeline.jobs import job_logging; from rankstudy.data import letor",
                                headroom_mb=16)
    assert job.returncode == 1
    last = job.stderr.strip().splitlines()[-1]
    assert last.startswith("rankstudy parse_fold: out of memory: starting the parse_fold job failed with "
                           "ImportError:") and "failed to map segment" in last
    assert "limits in effect: address-space limit (ulimit -v)" in last and "mem_mb=1000" in last


def test_memory_errors_outside_a_job_script_keep_pythons_own_report(tmp_path):
    script = tmp_path / "plain.py"
    script.write_text("import rankstudy\nraise MemoryError\n")
    job = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60)
    assert job.stderr.strip().splitlines()[-1] == "MemoryError"


def test_other_errors_keep_their_traceback(tmp_path, monkeypatch):
    monkeypatch.setattr(sys, "stderr", sys.stderr)
    with pytest.raises(RuntimeError, match="a bug"):
        with job_logging(FakeJob(tmp_path), "train"):
            raise RuntimeError("a bug")


def load_bootstrap():
    spec = importlib.util.spec_from_file_location("bootstrap", REPO / "setup" / "bootstrap.py")
    bootstrap = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bootstrap)
    return bootstrap


def test_the_bootstrap_says_a_thread_that_could_not_start_means_too_little_memory(capsys):
    """A process that cannot start a thread under a small address-space limit, as Snakemake
    could not ("RuntimeError: can't start new thread"): its output passes through, then the hint."""
    starts_a_thread = textwrap.dedent("""
        import resource, threading
        vm_size = next(int(line.split()[1]) * 1024 for line in open("/proc/self/status") if line.startswith("VmSize:"))
        resource.setrlimit(resource.RLIMIT_AS, (vm_size + 2**20,) * 2)  # less than a thread's stack
        print("Building DAG of jobs...", flush=True)
        threading.Thread(target=print).start()
    """)
    code = load_bootstrap().run_snakemake([sys.executable, "-c", starts_a_thread], dict(os.environ))
    out = capsys.readouterr().out
    assert code == 1 and "Building DAG of jobs..." in out and "can't start new thread" in out
    assert "[bootstrap] out of memory: snakemake could not start a thread: too little address space" in out
    assert "CORES=1" in out and "address-space limit (ulimit -v)" in out
    # the Snakefile's own line (once the workflow loaded) is not said twice
    said = starts_a_thread.replace('threading.Thread(target=print).start()',
                                   'try:\n    threading.Thread(target=print).start()\nfinally:\n'
                                   '    print("rankstudy: out of memory: snakemake could not start a thread")')
    assert load_bootstrap().run_snakemake([sys.executable, "-c", said], dict(os.environ)) == 1
    assert "[bootstrap]" not in capsys.readouterr().out


def test_the_bootstrap_adds_no_hint_to_other_failures(capsys):
    code = load_bootstrap().run_snakemake([sys.executable, "-c", "raise SystemExit('MissingInputException')"],
                                          dict(os.environ))
    assert code == 1 and "[bootstrap]" not in capsys.readouterr().out


def test_snakemake_under_too_small_an_address_space_is_told_so_before_any_job(monkeypatch):
    """`ulimit -v 400000` made the Snakefile fail with "libscipy_openblas...: failed to map
    segment from shared object", and 800000 with "can't start new thread": neither said memory."""
    from rankstudy.util import memory

    monkeypatch.setattr(memory.resource, "getrlimit", lambda _: (400000 * 1024, 400000 * 1024))
    message = memory.workflow_memory_problem()
    assert message.startswith("rankstudy: out of memory: the address-space limit (ulimit -v) is 391 MiB")
    assert "ulimit -v unlimited" in message
    monkeypatch.setattr(memory.resource, "getrlimit", lambda _: (memory.resource.RLIM_INFINITY,) * 2)
    assert memory.workflow_memory_problem() is None
    assert memory.workflow_memory_problem(ImportError("x.so: cannot open shared object file")) is None
    mapped = memory.workflow_memory_problem(ImportError("libscipy_openblas.so: failed to map segment from shared object"))
    assert "loading the workflow failed with ImportError: libscipy_openblas.so: failed to map segment" in mapped


# ---------------------------------------------------------------- damaged files, a full disk


def cached_split(tmp_path) -> Path:
    from rankstudy.data.kinds import save_split

    path = tmp_path / "results" / "train.npz"
    path.parent.mkdir()
    save_split(split([2, 1, 0]), path)
    return path


@pytest.mark.parametrize("damage", ["truncated", "corrupted", "empty"])
def test_a_damaged_split_cache_is_named_and_removed_so_that_the_next_run_makes_it(damage, tmp_path, capsys,
                                                                                  monkeypatch):
    from rankstudy.data.kinds import DamagedCache, load_split

    path = cached_split(tmp_path)
    data = path.read_bytes()
    path.write_bytes({"truncated": data[: len(data) // 2], "empty": b"",
                      "corrupted": data[:-200] + b"\xff" * 100 + data[-100:]}[damage])
    monkeypatch.setattr(sys, "stderr", sys.stderr)
    with pytest.raises(SystemExit):
        with job_logging(FakeJob(tmp_path), "train"):
            load_split(path)
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"rankstudy train: {path}: damaged cache, cannot be read (")
    assert "it was removed: run again and it is made anew" in err
    assert not path.exists()
    with pytest.raises(FileNotFoundError):  # an intact-but-missing cache is no DamagedCache
        load_split(path)
    assert issubclass(DamagedCache, Exception)


def test_a_damaged_json_intermediate_is_named_with_what_to_do(tmp_path):
    from rankstudy.util.atomic import DamagedFile, read_json

    (tmp_path / "fit.json").write_text('{"uid": "ab')
    with pytest.raises(DamagedFile, match=r"fit.json: damaged, not valid JSON \(.*line 1.*\); delete it and run again"):
        read_json(tmp_path / "fit.json")


def full_disk(filename) -> BaseException:
    """What writing onto a full disk raises inside numpy's savez: three chained errors, the
    first one Errno 28."""
    try:
        try:
            try:
                raise OSError(errno.ENOSPC, "No space left on device", filename)
            except OSError as exc:
                raise ValueError("write failed") from exc
        except ValueError:
            raise RuntimeError("zipfile: cannot close")
    except RuntimeError as exc:
        return exc


@pytest.mark.parametrize("filename", ["results/features/x/fold1/train.npz", None])
def test_a_full_disk_ends_the_job_with_one_line_naming_what_it_could_not_write(filename, tmp_path, capsys,
                                                                               monkeypatch):
    job = FakeJob(tmp_path)
    job.output = [str(tmp_path / "results" / "runs" / "model.json")]
    monkeypatch.setattr(sys, "stderr", sys.stderr)
    with pytest.raises(SystemExit):
        with job_logging(job, "featurize"):
            raise full_disk(filename)
    err = capsys.readouterr().err
    where = filename or job.output[0]
    assert err.count("\n") == 1 and err.startswith(f"rankstudy featurize: cannot write {where}: no space left on the "
                                                   f"device (")
    assert "MB free in" in err and "free some space and run again" in err


def test_the_mlflow_store_s_disk_full_ends_the_job_with_one_line_naming_the_store(tmp_path, capsys, monkeypatch):
    """SQLite says "database or disk is full" with no errno or file name, under SQLAlchemy's and
    MLflow's own errors: the aggregate job ended with their traceback."""
    import sqlite3

    job = FakeJob(tmp_path)
    job.output, job.config = [str(tmp_path / "summary.json")], {"mlflow": {"tracking_uri": None}}
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    monkeypatch.setattr(sys, "stderr", sys.stderr)
    with pytest.raises(SystemExit):
        with job_logging(job, "aggregate"):
            try:
                raise sqlite3.OperationalError("database or disk is full")
            except sqlite3.OperationalError as exc:
                raise RuntimeError("(sqlite3.OperationalError) database or disk is full") from exc
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"rankstudy aggregate: cannot write {tmp_path / 'results' / 'mlflow.db'}"
                                                   f": no space left on the device (")


def test_an_error_that_is_no_full_disk_keeps_its_traceback(tmp_path, monkeypatch):
    monkeypatch.setattr(sys, "stderr", sys.stderr)
    with pytest.raises(RuntimeError, match="zipfile"):
        with job_logging(FakeJob(tmp_path), "featurize"):
            raise RuntimeError("zipfile: cannot close") from OSError(errno.EIO, "Input/output error")


# ---------------------------------------------------------------- bad YAML under plain snakemake


@pytest.mark.slow
def test_bad_yaml_in_config_yaml_or_a_config_value_is_one_line_naming_where_before_any_job(tmp_path):
    """Snakemake's own message for bad YAML ("Config file is not valid JSON or YAML") names
    neither the file nor the line; a ConfigError raised in rankstudy's modules came with their
    traceback. (A --configfile file is read by Snakemake before the Snakefile: bootstrap.py run
    checks it, tests/test_bootstrap.py.)"""
    from pipeline_runs import SNAKEMAKE, make_workdir

    workdir = make_workdir(tmp_path, {})
    config = workdir / "config" / "config.yaml"
    lines = config.read_text().splitlines(keepends=True)
    config.write_text("".join(lines[:2]) + "\t" + "".join(lines[2:]))
    runs = {}
    for name, args in {"config.yaml": [], "--config": ["--config", "folds=[1,2"]}.items():
        if name == "--config":
            config.write_text("".join(lines))
        runs[name] = subprocess.run([SNAKEMAKE, "--cores", "2", *args], cwd=workdir, capture_output=True, text=True,
                                    timeout=120)
        assert runs[name].returncode == 1 and "rankstudy/" not in runs[name].stderr, runs[name].stderr
        assert not (workdir / "results" / "runs").exists()
    assert f"\nconfig file {config}:3: found character '\\t' (a tab; indent with spaces)" in runs["config.yaml"].stderr
    assert "\n--config folds=[1,2: not valid YAML at column 5: expected ',' or ']'" in runs["--config"].stderr


# ---------------------------------------------------------------- Snakemake's own threads under ulimit -v


def test_snakemake_s_scheduler_keeps_one_reevaluation_timer_not_one_more_per_finished_job():
    """Each pass of Snakemake's scheduler loop started a 1-s timer whose firing starts the next
    pass: one more endless chain of timer threads per finished job (26 threads after 21 jobs)."""
    import threading

    from snakemake.scheduling.job_scheduler import JobScheduler

    from rankstudy.pipeline import snakemake_timers

    original = JobScheduler._schedule_reevalutation
    try:
        assert snakemake_timers.one_reevaluation_timer()  # the installed Snakemake has the method it replaces
        scheduler = JobScheduler.__new__(JobScheduler)
        scheduler._open_jobs = threading.Semaphore(0)
        before = threading.active_count()
        for _ in range(20):  # twenty passes of the loop (finished jobs) within the timespan
            scheduler._schedule_reevalutation(0.3)
        assert threading.active_count() == before + 1
        assert scheduler._open_jobs.acquire(timeout=5)  # the pending timer still wakes the loop
        getattr(scheduler, snakemake_timers._PENDING).join(5)
        scheduler._schedule_reevalutation(0.01)  # and once it has fired, the next pass arms a new one
        assert scheduler._open_jobs.acquire(timeout=5)
    finally:
        JobScheduler._schedule_reevalutation = original


THREADS_UNDER_A_LIMIT = """
    import resource, sys, threading
    resource.setrlimit(resource.RLIMIT_AS, (2**40, 2**40))
    from rankstudy.util.memory import spare_address_space
    assert spare_address_space() == (sys.argv[1] == "spare")
    def vm_size():
        return next(int(line.split()[1]) * 1024 for line in open("/proc/self/status") if line.startswith("VmSize:"))
    go, done = threading.Event(), threading.Barrier(9)
    def allocate():
        blocks = [bytearray(64 * 1024) for _ in range(50)]  # small blocks: from the thread's arena
        done.wait()
        go.wait()
    start = vm_size()
    threads = [threading.Thread(target=allocate) for _ in range(8)]
    for t in threads:
        t.start()
    done.wait()
    print((vm_size() - start) // 2**20)
    go.set()
"""


def test_under_an_address_space_limit_threads_share_malloc_arenas():
    """glibc reserved a 64 MiB arena for each thread that allocates: Snakemake, a thread per
    running job, needed 1.4 GiB of address space on the default study and stopped with "can't
    start new thread" under ulimit -v 1048576. Under a limit, threads share two arenas."""
    grown = {}
    for mode in ("spare", "default"):
        env = dict(os.environ)
        env.pop("MALLOC_ARENA_MAX", None)
        code = textwrap.dedent(THREADS_UNDER_A_LIMIT)
        if mode == "default":  # the same process without the limit: glibc's own arenas
            code = code.replace("resource.setrlimit(resource.RLIMIT_AS, (2**40, 2**40))", "")
        out = subprocess.run([sys.executable, "-c", code, mode], capture_output=True, text=True, env=env, timeout=60)
        assert out.returncode == 0, out.stderr
        grown[mode] = int(out.stdout)
    # eight thread stacks (8 MiB each) and at most two arenas, against an arena per thread
    assert grown["spare"] <= 8 * 8 + 2 * 64 + 16 < grown["default"], grown


def test_a_thread_snakemake_could_not_start_ends_the_run_with_a_line_naming_the_limits(tmp_path):
    from rankstudy.util.memory import thread_start_failed, thread_start_message

    log, crash = tmp_path / "snakemake.log", tmp_path / "crash.log"
    # as Snakemake logs a job whose thread it could not start, and its scheduler's own crash
    log.write_text('RuleException:\nRuntimeError in file "workflow/rules/train.smk", line 31:\ncan\'t start new thread\n')
    crash.write_text("Traceback (most recent call last):\n    _start_new_thread(self._bootstrap, ())\n"
                     "RuntimeError: can't start new thread\n")
    assert thread_start_failed([tmp_path / "missing.log", log]) and thread_start_failed([crash])
    # a job that said it ran out itself (its log shown by --show-failed-logs) is not Snakemake's failure
    job = tmp_path / "job.log"
    job.write_text("rankstudy train: out of memory: the train job failed with RuntimeError: can't start new thread; ...\n")
    assert not thread_start_failed([tmp_path / "missing.log", job])
    message = thread_start_message()
    assert message.startswith("rankstudy: out of memory: snakemake could not start a thread: too little address space")
    assert "address-space limit (ulimit -v)" in message and "--cores 1" in message and "\n" not in message
