"""The reproduction scorecard over the member studies of a scorecard run: every published cell
(and claim) on our data sets, ours beside it (rankstudy.reporting.scorecard). Reads each member's
method summaries and written test scores, which its run_study job (input) ran to completion."""

from pathlib import Path

import pandas as pd
import yaml

from rankstudy.pipeline.jobs import job_logging
from rankstudy.pipeline.study_results import StudyScores, published_cells
from rankstudy.reporting import scorecard as sc
from rankstudy.util import atomic


with job_logging(snakemake, "scorecard"):
    p = snakemake.params
    rows, variant_rows = [], []
    per_query, every_fold_learned = {}, {}  # (study, system) -> test metrics per query; whether every fold learned
    for study, config_path in p.members.items():
        member = yaml.safe_load(Path(config_path).read_text())
        for dataset in p.datasets:
            scores = StudyScores(study, dataset)
            fold_scores = scores.fold_scores
            cells = published_cells(study, member["paper"], dataset) if member.get("paper") else []
            for cell in cells:
                found = fold_scores(cell.system)
                if found is None:
                    rows.append(sc.not_run(cell))
                    continue
                folds, learned = found
                row, variants = sc.score_cell(
                    sc.Cell(**{**cell.__dict__, "learned": learned}), folds, p.n_resamples, p.seed, p.confidence,
                    convention=member["paper"].get("convention"))
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
            study_per_query, study_learned = scores.learned_per_query()
            per_query.update({(study, system): frame for system, frame in study_per_query.items()})
            every_fold_learned.update({(study, system): v for system, v in study_learned.items()})
            print(f"scorecard: {study} on {dataset}: {len(cells)} published cell(s)", flush=True)
    if not rows:
        raise ValueError("scorecard: no published cell or claim on data sets " + ", ".join(p.datasets)
                         + " in studies " + ", ".join(p.members))
    card = pd.DataFrame(rows, columns=sc.CSV_COLUMNS)
    if snakemake.input.forensics:  # the protocol variant closest to the paper, per cell rerun
        card = sc.with_protocols(card, pd.read_csv(snakemake.input.forensics[0]))
    title = "Reproduction scorecard: " + ", ".join(p.datasets)
    atomic.write_csv(card, snakemake.output.csv)
    atomic.write_csv(pd.DataFrame(variant_rows), snakemake.output.conventions)
    better = sc.beyond(card, per_query, every_fold_learned, p.n_resamples, p.seed)
    atomic.write_csv(better, snakemake.output.beyond)
    atomic.write_text(snakemake.output.html, sc.to_html(card, title, better))
    atomic.write_text(snakemake.output.md, sc.to_markdown(card, title, better))
    print(Path(snakemake.output.md).read_text())
