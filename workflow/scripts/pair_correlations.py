"""Pearson rho of every second-order feature x_i * x_j (i <= j) with the label, on the
normalised training split, computed without materialising the products."""

from rankstudy.util import atomic
from rankstudy.features import pairs
from rankstudy.data.kinds import load_split
from rankstudy.pipeline.jobs import job_logging
from rankstudy.features.normalize import Normalizer

with job_logging(snakemake, "pair_correlations"):
    train = load_split(snakemake.input.train)
    train = Normalizer(snakemake.params.normalization).fit(train).transform(train)
    corr = pairs.pair_correlations(train.X, train.y, chunk_rows=snakemake.config["features"]["chunk_rows"])  # memory only: not a param
    print(f"{len(corr)} pairs from {train.n_features} features and {train.X.shape[0]} documents")
    atomic.write_csv(corr, snakemake.output[0], sep="\t", float_format="%.17g")
