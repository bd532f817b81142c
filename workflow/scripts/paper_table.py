"""A seed paper's table in its own layout (rows, columns, metric), our numbers beside the
published ones, for one study and data set."""

from pathlib import Path

import numpy as np

from rankstudy.util import atomic
from rankstudy.reporting import paper_tables
from rankstudy.pipeline import results
from rankstudy.pipeline.jobs import job_logging

with job_logging(snakemake, "paper_table"):
    w, spec = snakemake.wildcards, snakemake.params.paper
    per_query = results.test_per_query(snakemake.input.per_query)
    sizes = {}
    for path in snakemake.input.transforms:  # .../features/{dataset}/{featureset}/fold{k}/transform.json
        sizes.setdefault(Path(path).parts[-3], []).append(atomic.read_json(path)["n_features"])
    n_features = {fs: float(np.mean(v)) for fs, v in sizes.items()}
    label = spec.get("label", f"Table {spec['table']}")
    paper = Path(spec["reference"]).stem.split("-")[0]
    out_prefix = Path(snakemake.output.md[: -len(".paper.md")])
    if spec.get("layout", "cells") == "datasets":
        # every published data set side by side; paper.dataset is not used
        published = paper_tables.load_published(spec["reference"], spec["table"])
        table = paper_tables.fill_datasets(spec, per_query, published, w.dataset)
        caption = (f"{label} of {paper} beside ours on {w.dataset} (study {w.study}), one sub-table per column "
                   f"of {label}: ours = mean ± std over folds {snakemake.params.folds} of the test split of "
                   f"{w.dataset}; the other columns are the paper's numbers on its data sets (named below, not "
                   f"ours), \"–\" where a side has no number.")
        written = paper_tables.write_datasets(table, out_prefix, caption)
    else:
        published = paper_tables.load_published(spec["reference"], spec["table"], spec.get("dataset"))
        table = paper_tables.fill(spec, per_query, n_features, published)
        caption = (f"{label} of {paper} on {w.dataset} (study {w.study}): "
                   f"ours = mean ± std over folds {snakemake.params.folds} of the test split; paper = the published "
                   f"number, measured on the data set named below (not ours unless you supplied it).")
        written = paper_tables.write(table, out_prefix, caption)
    print(Path(snakemake.output.md).read_text())
