"""Test accuracy against one method parameter swept across the study's methods (Dubey et al.,
Figures 4-6): a plot per metric and the table behind it."""

from rankstudy.pipeline import results
from rankstudy.pipeline.jobs import job_logging
from rankstudy.reporting import sampler_studies

with job_logging(snakemake, "sweep_plot"):
    w, p = snakemake.wildcards, snakemake.params
    sweep = p.sweep
    metrics = sweep.get("metrics", p.metrics)
    per_query = results.test_per_query(snakemake.input.per_query, p.systems)
    table = sampler_studies.sweep_table(per_query, p.methods, p.featuresets, sweep["parameter"], metrics)
    sampler_studies.write_sweep(table, snakemake.output.png, snakemake.output.csv, parameter=sweep["parameter"],
                                metrics=metrics, label=sweep.get("label"), log_x=sweep["log_x"],
                                title=f"{w.dataset} (study {w.study}): test accuracy vs {sweep['parameter']}")
    print(table.to_string(index=False))
