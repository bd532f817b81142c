"""The tutorial (docs/tutorial.md) done as a reader does it, in a copy of the project: its loss
appended to its module, its registry entry added, its study file written, and its commands run
in order through bash, with the project's environment on PATH (as `. .venv/bin/activate` puts
it) and the copy's `src` first on PYTHONPATH (so the jobs import the changed package). The
Snakemake run gets `--config 'folds=[1]'`: one fold instead of five. Then the leaderboard must
list the systems the page shows. What to do with each block is its `<!-- test: ... -->` marker
(tests/docblocks.py)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from docblocks import blocks
from pipeline_runs import job_counts

REPO = Path(__file__).resolve().parents[1]
COPIED = ("Snakefile", "workflow", "config", "environment.yml", "pyproject.toml", "src", "tests")
ONE_FOLD = " --config 'folds=[1]'"


def project_copy(dest: Path) -> Path:
    dest.mkdir(parents=True)
    ignore = shutil.ignore_patterns("__pycache__", "*.egg-info", ".pytest_cache")
    for name in COPIED:
        src = REPO / name
        (shutil.copytree(src, dest / name, ignore=ignore) if src.is_dir() else shutil.copy(src, dest / name))
    return dest


def environment(workdir: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "MLFLOW_"))}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env["PYTHONPATH"] = str(workdir / "src")
    return env


def insert_entry(path: Path, registry: str, code: str) -> None:
    """The entry's line(s) right after the line that opens ``registry``'s dict literal."""
    lines = path.read_text().splitlines(keepends=True)
    [at] = [i for i, line in enumerate(lines) if re.match(rf"{registry}\b.*= \{{\s*$", line)]
    lines[at + 1:at + 1] = [line + "\n" for line in code.rstrip("\n").splitlines()]
    path.write_text("".join(lines))


def run(command: str, workdir: Path) -> subprocess.CompletedProcess:
    if command.startswith("snakemake "):
        command += ONE_FOLD
    out = subprocess.run(["bash", "-c", f"set -euo pipefail\n{command}"], cwd=workdir, env=environment(workdir),
                         capture_output=True, text=True, timeout=1200)
    assert out.returncode == 0, f"{command} failed ({out.returncode}):\n{out.stdout[-4000:]}\n{out.stderr[-6000:]}"
    return out


def apply(block, workdir: Path) -> bool:
    """Put an ``append``, ``entry`` or ``write`` block where it says; False for other blocks."""
    target = workdir / block.args[-1] if block.args else None
    if block.action == "append":
        target.write_text(target.read_text().rstrip("\n") + "\n\n\n" + block.code)
    elif block.action == "entry":
        insert_entry(target, block.args[0], block.code)
    elif block.action == "write":
        assert not target.exists(), f"the tutorial's {block.args[-1]} is already a file of the project"
        target.write_text(block.code)
    else:
        return False
    return True


def test_the_tutorial_runs_as_written_to_the_leaderboard(tmp_path):
    workdir = project_copy(tmp_path / "clone")
    outputs: dict[str, str] = {}
    shown = []
    for block in blocks("tutorial.md"):
        if apply(block, workdir):
            continue
        if block.action == "run":
            for command in block.code.splitlines():
                if command.strip() and not command.lstrip().startswith("#"):
                    outputs[command] = run(command, workdir).stdout
        elif block.action == "shows":
            shown.append((block.args[0], block.code))
        else:
            raise AssertionError(f"docs/tutorial.md: unknown test marker {block.what!r}")

    assert any("pointwise_huber" in out for out in outputs.values())  # listed by `rankstudy list losses`
    assert shown, "the tutorial shows what the leaderboard looks like"
    for path, sample in shown:
        made = (workdir / path).read_text()
        systems = re.findall(r"\| (\w+ \[\w+\]) +\|", sample)
        assert systems and all(f" {system} " in made for system in systems), (systems, made)
        assert [line for line in sample.splitlines() if line.startswith("#")][0] in made


def test_the_tutorials_job_counts_are_what_snakemake_plans(tmp_path):
    """The page's count of the study's jobs on its 5 folds (the data and features shared with the
    default run), and of the jobs that make those in a clone where the default run has not run:
    Snakemake's plan for the study in such a clone (it said "about 50", 36 ran after the default run)."""
    workdir = project_copy(tmp_path / "clone")
    for block in blocks("tutorial.md"):
        apply(block, workdir)
    text = " ".join((REPO / "docs" / "tutorial.md").read_text().split())
    study_jobs = int(re.search(r"then (\d+) jobs: each method trained", text)[1])
    data_jobs = int(re.search(r"has not run, (\d+) jobs make them first", text)[1])
    out = subprocess.run([str(Path(sys.executable).with_name("snakemake")), "--dry-run", "--cores", "2",
                          "--configfile", "config/studies/huber.yaml"], cwd=workdir, env=environment(workdir),
                         capture_output=True, text=True, timeout=1200)
    assert out.returncode == 0, out.stderr[-4000:]
    counts = job_counts(out.stdout)
    data = sum(counts.pop(rule, 0) for rule in ("fetch_dataset", "parse_fold", "clean_fold", "featurize",
                                                "pair_correlations"))
    counts.pop("all")  # Snakemake's target, no job of its own
    assert (sum(counts.values()), data) == (study_jobs, data_jobs), counts
