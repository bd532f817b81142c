"""Shared fixtures. Tests that need the real LETOR files skip when ../shared/data is absent."""

from __future__ import annotations

import os
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
