"""Reading the pipeline's own outputs back in the report jobs: each file comes with the system
it belongs to (rankstudy.pipeline.layout names them; the rule passes the systems beside the
files, in the same order), so no path is parsed back."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import pandas as pd

from rankstudy.pipeline.records import MethodSummary
from rankstudy.reporting.scorecard import FoldScores


def _paired(paths: Iterable, systems: Sequence[dict]) -> list[tuple[str, dict]]:
    paths = [str(p) for p in paths]
    if len(paths) != len(systems):
        raise ValueError(f"{len(paths)} files for {len(systems)} systems")
    return list(zip(paths, systems))


def summaries(paths: Iterable, systems: Sequence[dict]) -> dict[str, MethodSummary]:
    """The method summaries (``summary.json``) of the systems, by system label."""
    return {system["system"]: MethodSummary.read(path) for path, system in _paired(paths, systems)}


def test_per_query(paths: Iterable, systems: Sequence[dict]) -> pd.DataFrame:
    """The test metrics per query of several systems, from their
    ``metrics.per_query.test.csv`` files (all folds, with a ``fold`` column): one frame with
    ``system``, ``method`` and ``featureset`` added. ``systems``: dicts with those three keys."""
    frames = [pd.read_csv(path).assign(system=s["system"], method=s["method"], featureset=s["featureset"])
              for path, s in _paired(paths, systems)]
    return pd.concat(frames, ignore_index=True)


def test_scores(paths_by_system: Sequence[Sequence], systems: Sequence[dict], folds: Sequence[int]
                ) -> dict[str, dict[int, FoldScores]]:
    """The written test scores (``scores.test.tsv``) of several systems: for each system (in
    ``systems`` order) its files of ``folds``, in that order."""
    if len(paths_by_system) != len(systems):
        raise ValueError(f"test scores of {len(paths_by_system)} systems for {len(systems)} systems")
    out = {}
    for paths, s in zip(paths_by_system, systems):
        paths = [str(p) for p in paths]
        if len(paths) != len(folds):
            raise ValueError(f"{len(paths)} test score files of {s['system']} for folds {list(folds)}")
        out[s["system"]] = {f: FoldScores.from_frame(pd.read_csv(path, sep="\t")) for f, path in zip(folds, paths)}
    return out


def not_learned(summaries_by_system: dict[str, MethodSummary]) -> dict[str, dict[int, list[str]]]:
    """The systems with a fold whose chosen model did not learn, and what the check found."""
    return {system: s.not_learned for system, s in summaries_by_system.items() if s.not_learned}


def tied_scores(summaries_by_system: dict[str, MethodSummary], max_tied_share: float) -> dict[str, dict[int, float]]:
    """The systems with a fold whose test scores were all tied in more than ``max_tied_share`` of
    its queries ({system: {fold: share}}); summaries from before the record have none."""
    out = {}
    for system, summary in summaries_by_system.items():
        shares = {int(fold): float(splits["test"]["all_tied_share"]) for fold, splits in summary.score_ties.items()
                  if "test" in splits}
        flagged = {fold: share for fold, share in shares.items() if share > max_tied_share}
        if flagged:
            out[system] = flagged
    return out
