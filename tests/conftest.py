"""Shared fixtures, and the base runs of the end-to-end tests built once per session. Tests that
need the real LETOR files skip when ../shared/data is absent."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = Path(os.environ.get("RANKSTUDY_SHARED_DATA", REPO.parent / "shared" / "data"))


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO


@pytest.fixture(scope="session")
def shared_data() -> Path:
    if not (SHARED_DATA / "MQ2008" / "Fold1" / "train.txt.gz").exists():
        if os.environ.get("RANKSTUDY_REQUIRE_SHARED_DATA"):
            pytest.fail(f"RANKSTUDY_REQUIRE_SHARED_DATA is set but {SHARED_DATA}/MQ2008 is missing")
        pytest.skip(f"real LETOR data not found under {SHARED_DATA}")
    return SHARED_DATA


@pytest.fixture(scope="session")
def mq2008_dir(shared_data: Path) -> Path:
    return shared_data / "MQ2008"


@pytest.fixture(scope="session")
def ohsumed_dir(shared_data: Path) -> Path:
    """LETOR 3.0 OHSUMED, QueryLevelNorm (the seeds' data: long queries, a third relevant)."""
    folder = shared_data / "OHSUMED" / "QueryLevelNorm"
    if not (folder / "Fold1" / "train.txt.gz").exists():
        if os.environ.get("RANKSTUDY_REQUIRE_SHARED_DATA"):
            pytest.fail(f"RANKSTUDY_REQUIRE_SHARED_DATA is set but {folder} is missing")
        pytest.skip(f"OHSUMED not found under {folder}")
    return folder


@pytest.fixture(scope="session")
def ohsumed_fold(ohsumed_dir: Path):
    """``ohsumed_fold(fold=1, cleaning=None, rel_threshold=1, normalization="querylevel")``: the
    fold's {train, vali, test} RankData, cleaned and normalised as the pipeline does (the
    cleaning rules as in config: ``{"chakrabarti": [...], "drop_no_relevant": [...], ...}``).
    Parsed once per session."""
    from rankstudy.data.folds import Fold, clean
    from rankstudy.data.letor import read_letor
    from rankstudy.features.normalize import Normalizer

    parsed: dict[int, dict] = {}

    def load(fold: int = 1, cleaning: dict | None = None, rel_threshold: float = 1,
             normalization: str = "querylevel") -> dict:
        if fold not in parsed:
            parsed[fold] = {s: read_letor(ohsumed_dir / f"Fold{fold}" / f"{s}.txt.gz", n_features=45, labels=[0, 2])
                            for s in ("train", "vali", "test")}
        prepared = Fold(dict(parsed[fold]), 2.0)
        clean(prepared, cleaning or {}, rel_threshold)
        normalizer = Normalizer(normalization).fit(prepared.splits["train"])
        return {s: normalizer.transform(d) for s, d in prepared.splits.items()}

    return load


# ---- base runs built once per session; a test that changes a run works on a copy (copy_run)

@pytest.fixture(autouse=True, scope="session")
def progress_on_the_terminal(request):
    """The runs take minutes: show Snakemake's progress as it comes, past pytest's capture."""
    runs = sys.modules.get("pipeline_runs")
    if runs is None:  # no collected test runs the pipeline
        return
    capture = request.config.pluginmanager.getplugin("capturemanager")

    def to_terminal(line: str) -> None:
        with capture.global_and_fixture_disabled():
            print(line, flush=True)

    runs.say = to_terminal


@pytest.fixture(scope="session")
def tiny_base(tmp_path_factory):
    """``(workdir, CompletedProcess)``: the tiny study (pipeline_runs.TINY) run once in a git clone
    of its own. Shared by every test that reads it: never change it, copy it (copy_run)."""
    from pipeline_runs import TINY, git, make_workdir, snakemake

    workdir = make_workdir(tmp_path_factory.mktemp("tiny-base"), TINY)
    git(workdir, "init", "-q")
    git(workdir, "add", ".")
    git(workdir, "commit", "-qm", "the user's clone")
    return workdir, snakemake(workdir)
