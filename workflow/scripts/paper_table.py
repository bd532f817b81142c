"""A seed paper's table in its own layout (rows, columns, metric), our numbers beside the
published ones, for one study and data set; systems whose model did not learn are marked."""

from pathlib import Path

import numpy as np

from rankstudy.pipeline import results
from rankstudy.pipeline.jobs import job_logging
from rankstudy.reporting import paper_tables
from rankstudy.util import atomic

with job_logging(snakemake, "paper_table"):
    w, p = snakemake.wildcards, snakemake.params
    spec = p.paper
    per_query = results.test_per_query(snakemake.input.per_query, p.systems)
    convention = spec.get("convention")
    if convention:  # the paper's evaluation tool's convention, from the written test scores
        scores = [snakemake.input[f"scores_{i}"] for i in range(len(p.systems))]
        per_query = paper_tables.rescore(spec, results.test_scores(scores, p.systems, p.folds), convention)
    under = f", every metric computed under the {convention} evaluation convention" if convention else ""
    not_learned = results.not_learned(results.summaries(snakemake.input.summaries, p.systems))
    n_features = {fs: float(np.mean([atomic.read_json(t)["n_features"] for t in snakemake.input[f"transform_{fs}"]]))
                  for fs in p.featuresets}
    label = spec.get("label", f"Table {spec['table']}")
    paper = Path(spec["reference"]).stem.split("-")[0]
    out_prefix = Path(snakemake.output.md[: -len(".paper.md")])
    if spec.get("layout", "cells") == "datasets":
        # every published data set side by side; paper.dataset is not used
        published = paper_tables.load_published(spec["reference"], spec["table"])
        table = paper_tables.fill_datasets(spec, per_query, published, w.dataset, not_learned)
        caption = (f"{label} of {paper} beside ours on {w.dataset} (study {w.study}), one sub-table per column "
                   f"of {label}: ours = mean ± std over folds {p.folds} of the test split of "
                   f"{w.dataset}{under}; the other columns are the paper's numbers on its data sets (named below, not "
                   f"ours; when one of them is {w.dataset}, it follows ours with the difference), \"–\" where a "
                   f"side has no number.")
        written = paper_tables.write_datasets(table, out_prefix, caption, not_learned)
    else:
        published = paper_tables.load_published(spec["reference"], spec["table"], spec.get("dataset"))
        table = paper_tables.fill(spec, per_query, n_features, published, not_learned)
        caption = (f"{label} of {paper} on {w.dataset} (study {w.study}): "
                   f"ours = mean ± std over folds {p.folds} of the test split{under}; paper = the published "
                   f"number, measured on the data set named below (not ours unless you supplied it).")
        written = paper_tables.write(table, out_prefix, caption, not_learned)
    print(Path(snakemake.output.md).read_text())
