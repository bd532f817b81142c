"""The reproduction scorecard over the member studies of a scorecard run: every published cell
(and claim) on our data sets, ours beside it (rankstudy.reporting.scorecard). Reads each member's
method summaries and written test scores, which its run_study job (input) ran to completion."""

from pathlib import Path

import pandas as pd
import yaml

from rankstudy.pipeline import layout
from rankstudy.pipeline.jobs import job_logging
from rankstudy.pipeline.records import MethodSummary
from rankstudy.reporting import paper_tables, scorecard as sc
from rankstudy.util import atomic


def published_cells(study: str, spec: dict, dataset: str) -> list[sc.Cell]:
    """The cells of a study's paper table that the paper measured on ``dataset``."""
    published = paper_tables.load_published(spec["reference"], spec["table"])
    published = published[[paper_tables.short_dataset(d) == dataset for d in published["dataset"]]]
    if published.empty:
        return []
    label = f"{Path(spec['reference']).stem.split('-')[0]} {spec.get('label', 'Table ' + str(spec['table']))}"
    values = published.set_index(["row", "column"])["value"]
    out = []
    for cell in paper_tables.cells(spec).itertuples(index=False):
        if (cell.row, cell.column) in values.index:
            out.append(sc.Cell(label, study, cell.row, cell.column, cell.system, cell.metric,
                               float(values.loc[(cell.row, cell.column)])))
    return out


with job_logging(snakemake, "scorecard"):
    p = snakemake.params
    rows, variant_rows = [], []
    per_query, every_fold_learned = {}, {}  # (study, system) -> test metrics per query; whether every fold learned
    for study, config_path in p.members.items():
        member = yaml.safe_load(Path(config_path).read_text())
        for dataset in p.datasets:
            cache = {}

            def fold_scores(system: str) -> tuple[dict, bool] | None:
                """A system's written test scores by fold and whether every fold learned; None for a
                system the study does not run (a method the paper only quotes)."""
                if system not in cache:
                    method, featureset = layout.split_system_label(system)
                    keys = dict(study=study, dataset=dataset, featureset=featureset, method=method)
                    path = Path(layout.fill(layout.METHOD_SUMMARY, **keys))
                    if not path.exists():
                        cache[system] = None
                        return None
                    summary = MethodSummary.read(path)
                    scores = f"{layout.FOLD_DIR}/{layout.EVALUATE_OUTPUTS['scores_test']}"
                    folds = {f: sc.FoldScores.from_frame(pd.read_csv(layout.fill(scores, fold=f, **keys), sep="\t"))
                             for f in summary.folds}
                    cache[system] = (folds, not summary.not_learned)
                return cache[system]

            cells = published_cells(study, member["paper"], dataset) if member.get("paper") else []
            for cell in cells:
                found = fold_scores(cell.system)
                if found is None:
                    rows.append(sc.not_run(cell))
                    continue
                folds, learned = found
                row, variants = sc.score_cell(
                    sc.Cell(**{**cell.__dict__, "learned": learned}), folds, p.n_resamples, p.seed, p.confidence)
                rows.append(row)
                variant_rows += variants
            if study in p.claims:
                for c in pd.read_csv(p.claims[study]).itertuples(index=False):
                    claim = sc.Claim(f"{study} {c.table}", study, c.claim, c.better, c.worse, c.metric)
                    found = [fold_scores(c.better), fold_scores(c.worse)]
                    if None in found:
                        raise ValueError(f"scorecard: {p.claims[study]}: study {study} has no results for "
                                         f"{c.better if found[0] is None else c.worse!r}")
                    rows.append(sc.score_claim(claim, found[0][0], found[1][0],
                                               p.n_resamples, p.seed, p.confidence))
            # every system of the study, for "beyond matching"
            systems = pd.read_csv(layout.fill(layout.TABLES, study=study, dataset=dataset) + ".csv")
            for system, part in systems.groupby("system", sort=False):
                method, featureset = layout.split_system_label(system)
                per_query[(study, system)] = pd.read_csv(layout.fill(
                    layout.METHOD_PER_QUERY, study=study, dataset=dataset, featureset=featureset, method=method))
                every_fold_learned[(study, system)] = bool(part["learned"].all())
            print(f"scorecard: {study} on {dataset}: {len(cells)} published cell(s)", flush=True)
    if not rows:
        raise ValueError("scorecard: no published cell or claim on data sets " + ", ".join(p.datasets)
                         + " in studies " + ", ".join(p.members))
    card = pd.DataFrame(rows, columns=sc.CSV_COLUMNS)
    title = "Reproduction scorecard: " + ", ".join(p.datasets)
    atomic.write_csv(card, snakemake.output.csv)
    atomic.write_csv(pd.DataFrame(variant_rows), snakemake.output.conventions)
    better = sc.beyond(card, per_query, every_fold_learned, p.n_resamples, p.seed)
    atomic.write_csv(better, snakemake.output.beyond)
    atomic.write_text(snakemake.output.html, sc.to_html(card, title, better))
    atomic.write_text(snakemake.output.md, sc.to_markdown(card, title, better))
    print(Path(snakemake.output.md).read_text())
