"""A finished study's results as the scorecard and the protocol forensics read them: the paper
cells it was run for, and each system's written test scores by fold (rankstudy.pipeline.layout
names every file; nothing is parsed back from a path)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from rankstudy.pipeline import layout
from rankstudy.pipeline.records import MethodSummary
from rankstudy.reporting import paper_tables
from rankstudy.reporting import scorecard as sc


def published_cells(study: str, spec: dict, dataset: str) -> list[sc.Cell]:
    """The cells of a study's paper table (its config's ``paper`` section) that the paper measured
    on ``dataset``."""
    published = paper_tables.load_published(spec["reference"], spec["table"])
    published = published[[paper_tables.short_dataset(d) == dataset for d in published["dataset"]]]
    if published.empty:
        return []
    label = f"{Path(spec['reference']).stem.split('-')[0]} {spec.get('label', 'Table ' + str(spec['table']))}"
    values = published.set_index(["row", "column"])["value"]
    return [sc.Cell(label, study, cell.row, cell.column, cell.system, cell.metric,
                    float(values.loc[(cell.row, cell.column)]))
            for cell in paper_tables.cells(spec).itertuples(index=False)
            if (cell.row, cell.column) in values.index]


class StudyScores:
    """The written test scores of one study's systems on one data set, read once each."""

    def __init__(self, study: str, dataset: str):
        self.study, self.dataset = study, dataset
        self._cache: dict[str, tuple[dict[int, sc.FoldScores], bool] | None] = {}

    def _keys(self, system: str) -> dict[str, str]:
        method, featureset = layout.split_system_label(system)
        return dict(study=self.study, dataset=self.dataset, featureset=featureset, method=method)

    def fold_scores(self, system: str) -> tuple[dict[int, sc.FoldScores], bool] | None:
        """A system's test scores by fold and whether every fold learned; None for a system the
        study does not run (a method the paper only quotes)."""
        if system not in self._cache:
            keys = self._keys(system)
            path = Path(layout.fill(layout.METHOD_SUMMARY, **keys))
            if not path.exists():
                self._cache[system] = None
            else:
                summary = MethodSummary.read(path)
                scores = f"{layout.FOLD_DIR}/{layout.EVALUATE_OUTPUTS['scores_test']}"
                folds = {f: sc.FoldScores.from_frame(pd.read_csv(layout.fill(scores, fold=f, **keys), sep="\t"))
                         for f in summary.folds}
                self._cache[system] = (folds, not summary.not_learned)
        return self._cache[system]

    def metric_values(self, system: str, metric: str) -> tuple[dict, bool] | None:
        """A system's ``metric`` per test query by fold, as its evaluation wrote it, and whether
        every fold learned; None for a system the study does not run."""
        keys = self._keys(system)
        path = Path(layout.fill(layout.METHOD_SUMMARY, **keys))
        if not path.exists():
            return None
        frame = pd.read_csv(layout.fill(layout.METHOD_PER_QUERY, **keys))
        if metric not in frame.columns:
            raise ValueError(f"{layout.fill(layout.METHOD_PER_QUERY, **keys)} has no {metric!r} column "
                             f"(study {self.study}'s evaluation.metrics)")
        values = {int(f): part[metric].to_numpy(dtype=np.float64) for f, part in frame.groupby("fold")}
        return values, not MethodSummary.read(path).not_learned

    def learned_per_query(self) -> tuple[dict[str, pd.DataFrame], dict[str, bool]]:
        """Every system of the study's table: its test metrics per query, and whether every fold
        learned (for "beyond matching")."""
        per_query, learned = {}, {}
        systems = pd.read_csv(layout.fill(layout.TABLES, study=self.study, dataset=self.dataset) + ".csv")
        for system, part in systems.groupby("system", sort=False):
            method, featureset = layout.split_system_label(system)
            per_query[system] = pd.read_csv(layout.fill(layout.METHOD_PER_QUERY, study=self.study, dataset=self.dataset,
                                                         featureset=featureset, method=method))
            learned[system] = bool(part["learned"].all())
        return per_query, learned
