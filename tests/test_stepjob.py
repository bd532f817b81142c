"""The per-fold jobs' command line (rankstudy.pipeline.stepjob): the job as `script:` would hand
it over, and a successful job's exit without Python's teardown."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from rankstudy.pipeline.stepjob import from_argv

JOB = {"wildcards": {"method": "ranknet", "fold": "2"},
       "input": {"train": "a/train.npz", "meta": "a/meta.json"},
       "output": {"model": "r/model.json", "fit": "r/fit.json"},
       "params": {"spec": {"kind": "linear", "grid": {"l2": [0.01, 1.0]}}, "seed": 0}}


def test_the_job_reads_as_a_script_job_does():
    job = from_argv(["train", json.dumps(JOB), "--log", "logs/x.log", "--threads", "2", "--mem-mb", "1009"])
    assert job.rule == "train" and job.log == ["logs/x.log"] and job.threads == 2 and job.resources.mem_mb == 1009
    assert job.input.train == job.input["train"] == "a/train.npz"
    assert job.params.spec["grid"]["l2"] == [0.01, 1.0] and job.params.seed == 0
    # iterated like a Namedlist: the values; as a dict (the log's first line): the names
    assert list(job.output) == ["r/model.json", "r/fit.json"]
    assert dict(job.wildcards) == {"method": "ranknet", "fold": "2"}
    assert getattr(job.input, "pairs", None) is None and job.config == {}
    with pytest.raises(AttributeError, match="pairs"):
        job.input.pairs


def test_a_job_without_its_log_is_refused(capsys):
    with pytest.raises(SystemExit):
        from_argv(["train", json.dumps(JOB)])
    assert "--log" in capsys.readouterr().err


def test_a_done_job_exits_at_once_with_its_files_and_console_lines(tmp_path):
    out = tmp_path / "out.txt"
    code = ("import atexit, sys\n"
            "from rankstudy.pipeline.stepjob import exit_done\n"
            "atexit.register(lambda: print('teardown ran'))\n"
            f"with open({str(out)!r}, 'w') as f:\n    f.write('written')\n"
            "print('to the console', end='')\n"
            "exit_done()\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout == "to the console"  # flushed; no atexit handler ran
    assert out.read_text() == "written"
