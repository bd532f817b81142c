"""Parse (or generate) one fold's train/vali/test splits once, apply the configured cleaning,
and cache them as binary .npz files; later rules never reparse text."""

import hashlib
from pathlib import Path

import numpy as np
import pandas as pd

from rankstudy import atomic, cleaning, datasets, qa, synthetic
from rankstudy.data import save_split
from rankstudy.jobs import job_logging
from rankstudy.letor import check_disjoint_queries, read_letor

SPLITS = ("train", "vali", "test")


def fingerprint(splits):
    h = hashlib.sha256()
    for split in SPLITS:
        d = splits[split]
        features = [d.X] if hasattr(d, "X") else [d.query_vectors.data, d.object_vectors.data]
        for array in (*features, d.y, d.qid):
            h.update(array.tobytes())
    return h.hexdigest()[:16]


def carve_validation(train, seed, fraction=0.2):
    """Hold out a seeded share of the training queries as the validation split."""
    rng = np.random.default_rng(seed)
    vali = np.zeros(train.n_queries, dtype=bool)
    vali[rng.permutation(train.n_queries)[: max(1, int(round(fraction * train.n_queries)))]] = True
    return train.select_queries(~vali), train.select_queries(vali)


def qa_table_splits(source, fold):
    """A user's QA table: 5 parts by question, the fold's rotation, bag-of-words fitted on train."""
    parts = qa.table_parts(qa.load_qa_table(source["file"]), seed=source["seed"])
    tables = {s: pd.concat([parts[k] for k in ks], ignore_index=True)
              for s, ks in synthetic.fold_parts(fold).items()}
    words = qa.BagOfWords(k=source["vocabulary"]).fit_table(tables["train"])
    return {s: words.transform(tables[s]) for s in SPLITS}


with job_logging(snakemake, "prepare_fold"):
    source = atomic.read_json(snakemake.input[0])
    name, fold = snakemake.wildcards.dataset, int(snakemake.wildcards.fold)
    if source["source"] == "synthetic":
        parts = synthetic.make_parts(seed=source["seed"], **{k: source[k] for k in ("n_queries", "n_features") if k in source})
        splits = synthetic.fold_splits(parts, fold)
        max_label, files = 4, {}
    elif source["source"] == "synthetic_qa":
        parts = qa.make_qa_parts(seed=source["seed"], **{k: source[k] for k in ("n_questions", "vocab_size") if k in source})
        splits, max_label, files = qa.qa_fold_splits(parts, fold), 1, {}
    elif source["source"] == "qa_table":
        splits, max_label, files = qa_table_splits(source, fold), 1, {s: source["file"] for s in SPLITS}
    else:
        entry = source["entry"]
        present = [s for s in SPLITS if s in entry.get("splits", SPLITS)]
        files = {s: datasets.split_file(name, entry, Path(source["data_root"]), fold, s) for s in present}
        splits = {}
        for s in present:
            print(f"parsing {files[s]}")
            splits[s] = read_letor(files[s], n_features=entry.get("n_features"))
        if "vali" not in splits:
            splits["train"], splits["vali"] = carve_validation(splits["train"], seed=source.get("seed", 0))
            print(f"no validation split: {splits['vali'].n_queries} training queries held out as vali")
        check_disjoint_queries({str(files.get(s, f"{files['train']} (held-out vali)")): splits[s] for s in SPLITS})
        max_label = entry["labels"][1]
    rules = snakemake.params.cleaning
    dropped = {}
    for s in SPLITS if hasattr(splits["train"], "X") else ():  # cleaning is for LETOR feature vectors
        if s in rules.get("chakrabarti", []):
            splits[s], n_zero = cleaning.drop_zero_vectors(splits[s])
            splits[s], n_dup = cleaning.drop_near_duplicate_pairs(splits[s], rel_threshold=snakemake.params.rel_threshold)
            dropped[f"{s}.zero_vectors"], dropped[f"{s}.near_duplicates"] = n_zero, n_dup
        if s in rules.get("drop_no_relevant", []):
            splits[s], n_q = cleaning.drop_queries_without_relevant(splits[s], rel_threshold=snakemake.params.rel_threshold)
            dropped[f"{s}.queries_without_relevant"] = n_q
    for key, n in dropped.items():
        print(f"cleaning {key}: dropped {n}")
    meta = {
        "dataset": name, "fold": fold, "max_label": max_label, "fingerprint": fingerprint(splits),
        "files": {s: str(p) for s, p in files.items()}, "dropped": dropped,
        "n_features": splits["train"].n_features if hasattr(splits["train"], "X") else
        splits["train"].query_vectors.shape[1] + splits["train"].object_vectors.shape[1],
        **{f"{s}.n_queries": splits[s].n_queries for s in SPLITS},
        **{f"{s}.n_docs": int(splits[s].offsets[-1]) for s in SPLITS},
    }
    for s in SPLITS:
        save_split(splits[s], snakemake.output[s])
    atomic.write_json(snakemake.output.meta, meta)
    print(meta)
