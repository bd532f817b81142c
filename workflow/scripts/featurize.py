"""One feature set of one fold: normalise (fitted on train), then append the second-order
products whose |rho| with the label reaches the feature set's threshold."""

import pandas as pd

from rankstudy import atomic, pairs
from rankstudy.config import is_quadratic, rho_of
from rankstudy.data import load_split, save_split
from rankstudy.jobs import job_logging
from rankstudy.normalize import Normalizer

with job_logging(snakemake, "featurize"):
    splits = {s: load_split(snakemake.input[s]) for s in ("train", "vali", "test")}
    # question-answer data keeps its bag-of-words counts as they are (no normalisation, no products)
    qa_data = not hasattr(splits["train"], "X")
    normalizer = Normalizer("none" if qa_data else snakemake.params.normalization)
    if not qa_data:
        normalizer.fit(splits["train"])
        splits = {s: normalizer.transform(d) for s, d in splits.items()}
    threshold = rho_of(snakemake.wildcards.featureset)
    if threshold is None:
        selected = pd.DataFrame({"i": pd.Series(dtype=int), "j": pd.Series(dtype=int), "rho": pd.Series(dtype=float)})
    else:
        corr = pd.read_csv(snakemake.input.correlations[0], sep="\t")
        selected = pairs.select_pairs(corr, threshold)
        if not is_quadratic(snakemake.wildcards.featureset):
            # rho feature sets materialise the products; quad ones leave them to the quadratic
            # functional, which computes them in chunks from pairs.tsv
            index = selected[["i", "j"]].to_numpy()
            splits = {s: pairs.expand(d, index) for s, d in splits.items()}
    first_order = (splits["train"].query_vectors.shape[1] + splits["train"].object_vectors.shape[1]
                   if qa_data else splits["train"].n_features)
    n_features = first_order + (len(selected) if is_quadratic(snakemake.wildcards.featureset) else 0)
    print(f"feature set {snakemake.wildcards.featureset}: {len(selected)} second-order features, "
          f"{n_features} in all")
    for s, d in splits.items():
        save_split(d, snakemake.output[s])
    # 1-based feature numbers, as in LETOR files
    out = selected.assign(i=selected["i"] + 1, j=selected["j"] + 1)
    atomic.write_csv(out, snakemake.output.pairs, sep="\t", float_format="%.10g")
    atomic.write_json(snakemake.output.transform, {
        "normalizer": normalizer.to_dict(), "rho_threshold": threshold, "n_pairs": len(selected),
        "n_features": n_features, "quadratic": is_quadratic(snakemake.wildcards.featureset)})
