"""Glue between Snakemake and the package: config checks and the job wrapper."""
