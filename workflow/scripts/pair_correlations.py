"""Pearson rho of every second-order feature x_i * x_j (i <= j) with the label, on the
normalised training split, computed without materialising the products."""

from rankstudy import atomic, pairs
from rankstudy.data import load_npz
from rankstudy.jobs import job_logging
from rankstudy.normalize import Normalizer

with job_logging(snakemake, "pair_correlations"):
    train = load_npz(snakemake.input.train)
    train = Normalizer(snakemake.params.normalization).fit(train).transform(train)
    corr = pairs.pair_correlations(train.X, train.y, chunk_rows=snakemake.params.chunk_rows)
    print(f"{len(corr)} pairs from {train.n_features} features and {train.X.shape[0]} documents")
    atomic.write_csv(corr, snakemake.output[0], sep="\t", float_format="%.17g")
