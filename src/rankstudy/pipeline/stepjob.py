"""The per-fold jobs (train, evaluate) run their script with `shell:`, not `script:`: Snakemake's
script preamble imports snakemake, about 0.1 s, as much as starting Python with numpy, and these
are the jobs a study has by the hundred. The rule hands the job over on the command line: its
wildcards, inputs, outputs and params as one JSON argument (`step_command` in
workflow/rules/common.smk), then its log, threads and memory. :func:`from_argv` gives the script
the attributes `script:` would (``input``, ``output``, ``params``, ``wildcards``, ``log``,
``threads``, ``resources``, ``config``, ``rule``), so the step code and
:func:`rankstudy.pipeline.jobs.job_logging` read it alike; :func:`exit_done` ends a job that
succeeded without Python's teardown."""

from __future__ import annotations

import argparse
import json
import os
import sys
from types import SimpleNamespace


class Named(dict):
    """A Snakemake Namedlist's reading side: items by name, as keys or attributes; iterated, its
    values (as a Namedlist's are)."""

    def __getattr__(self, key):
        try:
            return self[key]
        except KeyError:
            raise AttributeError(key) from None

    def __iter__(self):
        return iter(self.values())


def from_argv(argv: list[str] | None = None) -> SimpleNamespace:
    parser = argparse.ArgumentParser(description="one rankstudy pipeline step, as a Snakemake shell job runs it")
    parser.add_argument("rule")
    parser.add_argument("job", help="JSON: wildcards, input, output, params")
    parser.add_argument("--log", required=True)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--mem-mb", type=float)
    args = parser.parse_args(argv)
    job = json.loads(args.job)
    return SimpleNamespace(rule=args.rule, log=[args.log], threads=args.threads,
                           resources=SimpleNamespace(mem_mb=args.mem_mb), config={},
                           **{part: Named(job[part]) for part in ("wildcards", "input", "output", "params")})


def exit_done() -> None:
    """End the process of a job whose step succeeded, skipping Python's teardown: with SciPy's
    optimisers (or LightGBM, JAX) loaded it takes about 0.1 s, as long as starting Python with
    numpy. Every output and the log are written and closed by then (atomic writes, the log by
    job_logging); only the console streams need a flush."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)
