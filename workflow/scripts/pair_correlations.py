"""Pearson rho of every second-order feature x_i * x_j (i <= j) with the label, on the
normalised training split, computed without materialising the products."""

from rankstudy.util import atomic
from rankstudy.features import pairs
from rankstudy.pipeline.errors import ConfigError
from rankstudy.data.kinds import load_split
from rankstudy.pipeline.jobs import job_logging
from rankstudy.features.normalize import Normalizer

with job_logging(snakemake, "pair_correlations"):
    train = load_split(snakemake.input.train)
    chunk_rows = snakemake.config["features"]["chunk_rows"]  # memory only: not a param
    # refuse before allocating what the job was not given (m^2 growth: a wide data set can need far more)
    need_mb = pairs.pair_correlations_bytes(train.n_features, chunk_rows) / 2**20 + 3 * train.X.nbytes / 2**20
    have_mb = float(getattr(snakemake.resources, "mem_mb", 0) or 0)
    if have_mb and need_mb > have_mb:
        raise ConfigError(f"config key features.rho: the pair correlations of {train.n_features} features "
                          f"({train.n_features * (train.n_features + 1) // 2:,} pairs) need about {need_mb:,.0f} MB, "
                          f"more than this job's mem_mb = {have_mb:,.0f}; set features.rho: [] for this data set, or "
                          f"give the job more (--set-resources pair_correlations:mem_mb={int(need_mb * 1.2) + 500})")
    named = f"{snakemake.input.train} (split train)"  # a value normalisation cannot represent is refused naming it
    train = Normalizer(snakemake.params.normalization).fit(train, named).transform(train, named)
    corr = pairs.pair_correlations(train.X, train.y, chunk_rows=chunk_rows)
    print(f"{len(corr)} pairs from {train.n_features} features and {train.X.shape[0]} documents")
    atomic.write_csv(corr, snakemake.output[0], sep="\t", float_format="%.17g")
