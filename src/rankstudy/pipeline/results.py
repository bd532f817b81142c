"""Reading the pipeline's own outputs back: the layout of ``results/`` is the workflow's, so
the code that parses its paths lives beside the workflow glue, once."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import pandas as pd

from rankstudy.pipeline.config import system_label


def test_per_query(paths: Iterable[str | Path]) -> pd.DataFrame:
    """The test metrics per query of several systems, from the files
    ``results/runs/{dataset}/{featureset}/{method}/metrics.per_query.test.csv`` (all folds,
    with a ``fold`` column): one frame with ``system``, ``method`` and ``featureset`` added."""
    frames = []
    for path in map(Path, paths):
        featureset, method = path.parts[-3], path.parts[-2]
        frames.append(pd.read_csv(path).assign(system=system_label(method, featureset), method=method,
                                               featureset=featureset))
    return pd.concat(frames, ignore_index=True)
