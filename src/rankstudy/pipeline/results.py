"""Reading the pipeline's own outputs back: the layout of ``results/`` is the workflow's, so
the code that parses its paths lives beside the workflow glue, once."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import pandas as pd

from rankstudy.pipeline.config import system_label
from rankstudy.util import atomic


def _system(path: Path) -> tuple[str, str, str]:
    """(system label, method, feature set) of a file in results/runs/{dataset}/{featureset}/{method}/."""
    featureset, method = path.parts[-3], path.parts[-2]
    return system_label(method, featureset), method, featureset


def summaries(paths: Iterable[str | Path]) -> dict[str, dict]:
    """The aggregate summary (``summary.json``) beside each of these per-system files, by system."""
    return {_system(Path(p))[0]: atomic.read_json(Path(p).parent / "summary.json") for p in paths}


def test_per_query(paths: Iterable[str | Path]) -> pd.DataFrame:
    """The test metrics per query of several systems, from the files
    ``results/runs/{dataset}/{featureset}/{method}/metrics.per_query.test.csv`` (all folds,
    with a ``fold`` column): one frame with ``system``, ``method`` and ``featureset`` added."""
    frames = []
    for path in map(Path, paths):
        system, method, featureset = _system(path)
        frames.append(pd.read_csv(path).assign(system=system, method=method, featureset=featureset))
    return pd.concat(frames, ignore_index=True)
