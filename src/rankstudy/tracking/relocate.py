"""Artifact locations of an SQLite store that moved with its folder.

rankstudy keeps an SQLite store's artifacts in ``mlartifacts/`` beside the database
(``results/mlflow.db``, ``results/mlartifacts/``), but MLflow records an experiment's
artifact location and every run's artifact URI as absolute paths (it makes a relative
location absolute when the experiment is created), so after moving or copying ``results/``
they still name the old folder. This points every location that names an ``mlartifacts``
folder elsewhere at the one beside the database. MLflow has no API to change either (its
open requests: mlflow/mlflow#3144, a moved store; #3719 and #8700, an experiment's location),
so it is one SQL transaction on exactly two columns, ``experiments.artifact_location`` and
``runs.artifact_uri``, replacing the old folder's prefix; nothing else is touched.

    python -m rankstudy.tracking.relocate results/mlflow.db

(``python3 workflow/bootstrap.py ui`` and every logging job do it too.)
"""

from __future__ import annotations

import sqlite3
import sys
import urllib.parse
from pathlib import Path

ARTIFACTS_DIR = "mlartifacts"


def artifact_root(db: str | Path) -> str:
    """The artifact location of the experiments of the SQLite store ``db``: the
    ``mlartifacts`` folder beside it, as a file URI."""
    return (Path(db).resolve().parent / ARTIFACTS_DIR).as_uri()


def local_path(location: str) -> Path | None:
    """The folder a local artifact location (``file:`` URI or absolute path) names; None if remote."""
    if location.startswith("file:"):
        return Path(urllib.parse.unquote(urllib.parse.urlparse(location).path))
    return Path(location) if location.startswith("/") else None


def moved(location: str | None, root: str) -> bool:
    """Whether ``location`` is an ``mlartifacts`` folder on this machine other than ``root``,
    i.e. the artifacts of a store that has since moved (MLflow's own defaults, such as
    ``mlruns/0`` of the Default experiment, and remote stores are left alone)."""
    path = local_path(location or "")
    return path is not None and path.name == ARTIFACTS_DIR and location != root


def relocate_artifacts(db: str | Path) -> list[tuple[str, str]]:
    """Point the experiments (and their runs) of the SQLite store ``db`` whose artifacts are in
    a moved ``mlartifacts`` folder at the one beside ``db``, when there is one; return (old, new)
    per experiment changed."""
    root = artifact_root(db)
    if not local_path(root).is_dir():  # only the database was copied: its old links are all there is
        return []
    changed = []
    con = sqlite3.connect(db, timeout=30)  # waits for a job's write to end
    try:
        with con:  # one transaction: the experiments and their runs change together
            con.execute("BEGIN IMMEDIATE")
            rows = con.execute("SELECT experiment_id, artifact_location FROM experiments").fetchall()
            for experiment_id, old in rows:
                if not moved(old, root):
                    continue
                con.execute("UPDATE experiments SET artifact_location = ? WHERE experiment_id = ?",
                            (root, experiment_id))
                # a run's URI is its experiment's location + /<run id>/artifacts
                prefix = old.rstrip("/") + "/"
                con.execute("UPDATE runs SET artifact_uri = ? || substr(artifact_uri, ?) "
                            "WHERE experiment_id = ? AND substr(artifact_uri, 1, ?) = ?",
                            (root, len(prefix), experiment_id, len(prefix), prefix))
                changed.append((old, root))
    finally:
        con.close()
    return changed


def main(argv: list[str]) -> int:
    if len(argv) != 1 or not Path(argv[0]).is_file():
        print("usage: python -m rankstudy.tracking.relocate PATH/TO/mlflow.db", file=sys.stderr)
        return 2
    for old, new in relocate_artifacts(argv[0]):  # silent when nothing moved
        print(f"artifacts of {argv[0]}: {old} -> {new}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
