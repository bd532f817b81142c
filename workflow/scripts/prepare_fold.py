"""Parse (or generate) one fold's train/vali/test splits once, apply the configured cleaning,
and cache them as binary .npz files; later rules never reparse text."""

from rankstudy.util import atomic
from rankstudy.data.kinds import save_split
from rankstudy.data.folds import SPLITS, clean, load_fold
from rankstudy.pipeline.jobs import job_logging

with job_logging(snakemake, "prepare_fold"):
    name, fold_number = snakemake.wildcards.dataset, int(snakemake.wildcards.fold)
    # file names are relative to data_root (taken from the config, not a param: moving the data
    # folder must not rerun the fold), and meta.json records them so
    fold = load_fold(name, atomic.read_json(snakemake.input[0]), fold_number,
                     data_root=snakemake.config.get("data_root", "data"))
    clean(fold, snakemake.params.cleaning, snakemake.params.rel_threshold)
    for key, n in fold.dropped.items():
        print(f"cleaning {key}: dropped {n}")
    meta = {
        "dataset": name, "fold": fold_number, "max_label": fold.max_label, "fingerprint": fold.fingerprint(),
        "files": fold.files, "dropped": fold.dropped, "n_features": fold.n_features,
        **{f"{s}.n_queries": fold.splits[s].n_queries for s in SPLITS},
        **{f"{s}.n_docs": int(fold.splits[s].offsets[-1]) for s in SPLITS},
    }
    for s in SPLITS:
        save_split(fold.splits[s], snakemake.output[s])
    atomic.write_json(snakemake.output.meta, meta)
    print(meta)
