"""Make a data set available as its source says (rankstudy.data.sources): a generator needs
nothing; a registry data set is used as is when its files are under data_root, else downloaded
and unpacked there.

source.json records paths relative to data_root, never this machine's absolute paths: the next
job takes data_root from the config, so results stay portable."""

from pathlib import Path

from rankstudy.data import sources
from rankstudy.pipeline.jobs import job_logging
from rankstudy.util import atomic

with job_logging(snakemake, "fetch_dataset"):
    # data_root as configured: relative to the project (where jobs run) or absolute, and taken
    # from the config, not a param: moving the data folder must not rerun anything. Likewise
    # the folds (only this run's must be there): a changed param would rerun every fold.
    record = sources.fetch(snakemake.params.dataset, snakemake.params.source, Path(snakemake.config["data_root"]),
                           [int(f) for f in snakemake.config["folds"]], progress=print)
    atomic.write_json(snakemake.output[0], record)
