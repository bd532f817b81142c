"""Protocol forensics over a scorecard run: every published cell of each base study, ours under
each protocol variant (its rerun study's evaluated test queries) beside the study as configured
(rankstudy.reporting.forensics). The run_study jobs of the inputs ran every study to its end."""

from pathlib import Path

import pandas as pd
import yaml

from rankstudy.pipeline import layout
from rankstudy.pipeline.forensics import AS_STUDY
from rankstudy.pipeline.jobs import job_logging
from rankstudy.pipeline.study_results import StudyScores, published_cells
from rankstudy.reporting import forensics, plots
from rankstudy.util import atomic

with job_logging(snakemake, "forensics"):
    p = snakemake.params
    rows = []
    for base, spec in p.bases.items():
        paper = yaml.safe_load(Path(spec["config"]).read_text()).get("paper")
        if not paper:
            raise ValueError(f"config key scorecard.forensics.bases.{base}: {spec['config']} has no `paper` section, "
                             "so no published cell to explain")
        cells = [c for c in published_cells(base, paper, p.dataset) if layout.split_system_label(c.system)[0] in spec["methods"]]
        runs = [(base, AS_STUDY, "as configured", "the study as configured", p.dataset)]
        runs += [(study, v["variant"], v["choice"], v["label"], v["dataset"])
                 for study, v in p.variants.items() if v["base"] == base]
        for study, variant, choice, label, dataset in runs:
            scores = StudyScores(study, dataset)
            for cell in cells:
                found = scores.metric_values(cell.system, cell.metric)
                if found is None:
                    raise ValueError(f"forensics: study {study} on {dataset} has no results for {cell.system!r}")
                rows.append(forensics.variant_row(cell, variant, choice, label, found[0], found[1],
                                                  p.n_resamples, p.seed, p.confidence))
        print(f"forensics: {base}: {len(cells)} cell(s) under {len(runs)} protocol(s)", flush=True)
    frame = pd.DataFrame(rows, columns=forensics.COLUMNS)
    title = f"Protocol forensics: {p.dataset}"
    explained = forensics.explain(frame)
    atomic.write_csv(frame, snakemake.output.csv)
    atomic.write_csv(explained, snakemake.output.cells)
    plots.save_figure(forensics.figure(frame, title), snakemake.output.png)
    atomic.write_text(snakemake.output.html, forensics.to_html(frame, title, Path(snakemake.output.png).name))
    atomic.write_text(snakemake.output.md, forensics.to_markdown(frame, title))
    print(Path(snakemake.output.md).read_text())
