"""Where a result came from: the git commit of the workflow, read when a job runs (a tag of
its MLflow run), never a rule parameter, so that a new commit alone reruns nothing."""

from __future__ import annotations

import subprocess
from pathlib import Path


PACKAGE_DIR = Path(__file__).resolve().parents[1]


def git_commit(path: str | Path = PACKAGE_DIR) -> str:
    """HEAD of the repository holding ``path`` (default: this package's source, i.e. the code
    that ran), ``+dirty`` when its tracked files have uncommitted changes; ``unknown``
    outside a repository (e.g. an installed wheel) or without git."""
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=path, capture_output=True, text=True, timeout=10)
        commit = head.stdout.strip()
        if head.returncode != 0 or not commit:
            return "unknown"
        status = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=path,
                                capture_output=True, text=True, timeout=10)
        return commit + ("+dirty" if status.stdout.strip() else "")
    except (OSError, subprocess.SubprocessError):
        return "unknown"
