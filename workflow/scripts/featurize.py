"""One feature set of one fold: normalise (fitted on train), then select the second-order
products whose |rho| with the label reaches the feature set's threshold, and either append
them as columns (type rho) or leave them to the quadratic functional (type quad)."""

import pandas as pd

from rankstudy.data.kinds import load_split, save_split
from rankstudy.features import pairs
from rankstudy.features.featuresets import FeatureSet
from rankstudy.features.normalize import Normalizer, check_finite
from rankstudy.pipeline.jobs import job_logging
from rankstudy.util import atomic

with job_logging(snakemake, "featurize"):
    featureset = FeatureSet.from_dict(snakemake.params.featureset)
    splits = {s: load_split(snakemake.input[s]) for s in ("train", "vali", "test")}
    # question-answer data keeps its bag-of-words counts as they are (no normalisation, no products)
    letor = splits["train"].kind == "letor"
    normalizer = Normalizer(snakemake.params.normalization if letor else "none")
    # a value normalisation cannot represent is refused naming it, before any output is written
    named = {s: f"{snakemake.input[s]} (split {s})" for s in splits}
    if letor:
        normalizer.fit(splits["train"], named["train"])
        splits = {s: normalizer.transform(d, named[s]) for s, d in splits.items()}
    if featureset.second_order:
        corr = pd.read_csv(snakemake.input.correlations[0], sep="\t")
        selected = pairs.select_pairs(corr, featureset.threshold)
    else:
        selected = pd.DataFrame({"i": pd.Series(dtype=int), "j": pd.Series(dtype=int), "rho": pd.Series(dtype=float)})
    if featureset.materialised:
        # the quadratic functional computes quad sets' products itself, in chunks, from pairs.tsv
        index = selected[["i", "j"]].to_numpy()
        splits = {s: pairs.expand(d, index) for s, d in splits.items()}
        for s, d in splits.items():  # products of huge normalised values overflow: cache no inf
            check_finite(d, named[s], "a product of normalised features, which float64 cannot hold")
    n_features = splits["train"].n_features + (len(selected) if featureset.quadratic else 0)
    print(f"feature set {featureset.name}: {len(selected)} second-order features, {n_features} in all")
    if letor and snakemake.params.dtype != "float64":
        splits = {s: normalizer.cast(d, snakemake.params.dtype, named[s]) for s, d in splits.items()}
    for s, d in splits.items():
        save_split(d, snakemake.output[s])
    # 1-based feature numbers, as in LETOR files
    out = selected.assign(i=selected["i"] + 1, j=selected["j"] + 1)
    atomic.write_csv(out, snakemake.output.pairs, sep="\t", float_format="%.10g")
    atomic.write_json(snakemake.output.transform, {
        "normalizer": normalizer.to_dict(), "featureset": featureset.to_dict(), "rho_threshold": featureset.threshold,
        "n_pairs": len(selected), "n_features": n_features, "quadratic": featureset.quadratic})
