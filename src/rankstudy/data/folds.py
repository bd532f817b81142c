"""One fold's train/vali/test splits from a data set's source, whatever its kind: the embedded
generators, a user's question-answer table, or LETOR files under a data folder.

LETOR files are checked against the registry entry as they are read: their content against
``files_sha256`` (when stated), their labels against ``labels`` (integers in that range) and
their feature indices against ``n_features``; every error names the file and line. File
names are recorded relative to ``data_root`` (``Fold.files``), never as one machine's paths."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from rankstudy.data import cleaning, qa_table, registry, synthetic, synthetic_qa
from rankstudy.data.letor import check_disjoint_queries, read_letor
from rankstudy.data.rotation import fold_parts, fold_splits

SPLITS = ("train", "vali", "test")


class EmptySplitError(ValueError):
    """Cleaning left a split without a query; the message says which rules removed them."""


@dataclass
class Fold:
    splits: dict  # split name -> RankData or QAData
    max_label: float  # top grade of the label scale (for ERR)
    files: dict[str, str] = field(default_factory=dict)  # split name -> its file, relative to data_root
    dropped: dict[str, int] = field(default_factory=dict)  # cleaning counts

    @property
    def kind(self) -> str:
        """The data kind of the splits (rankstudy.data.kinds): ``letor`` or ``qa``."""
        return self.splits["train"].kind

    @property
    def n_features(self) -> int:
        return self.splits["train"].n_features

    def fingerprint(self) -> str:
        h = hashlib.sha256()
        for split in SPLITS:
            d = self.splits[split]
            for array in (*d.feature_arrays(), d.y, d.qid):
                h.update(array.tobytes())
        return h.hexdigest()[:16]


def carve_validation(train, seed: int, fraction: float = 0.2):
    """Hold out a seeded share of the training queries as the validation split."""
    vali = np.zeros(train.n_queries, dtype=bool)
    vali[np.random.default_rng(seed).permutation(train.n_queries)[: max(1, round(fraction * train.n_queries))]] = True
    return train.select_queries(~vali), train.select_queries(vali)


def _relative_to_root(path: Path, data_root: Path) -> str:
    """``path`` relative to ``data_root`` when it is under it (as recorded in meta.json)."""
    try:
        return Path(os.path.abspath(path)).relative_to(os.path.abspath(data_root)).as_posix()
    except ValueError:  # a `local` entry's folder outside data_root: as the registry names it
        return str(path)


def _qa_table_fold(source: dict, fold: int, data_root: Path) -> Fold:
    """A user's QA table: 5 parts by question, the fold's rotation, bag-of-words fitted on train."""
    path = data_root / source["file"]  # an absolute file (older source.json) stays as it is
    parts = qa_table.table_parts(qa_table.load_qa_table(path), seed=source["seed"])
    tables = {s: pd.concat([parts[k] for k in ks], ignore_index=True) for s, ks in fold_parts(fold).items()}
    words = qa_table.BagOfWords(k=source["vocabulary"]).fit_table(tables["train"])
    shown = _relative_to_root(path, data_root)
    return Fold({s: words.transform(tables[s]) for s in SPLITS}, 1, {s: shown for s in SPLITS})


def _letor_fold(name: str, source: dict, fold: int, progress: Callable[[str], None], data_root: Path) -> Fold:
    entry = source["entry"]
    present = [s for s in SPLITS if s in entry.get("splits", SPLITS)]
    files = {s: registry.split_file(name, entry, data_root, fold, s) for s in present}
    shown = {s: registry.shown_path(p, data_root) for s, p in files.items()}
    splits = {}
    for s in present:
        if registry.verify_split_file(name, entry, files[s], fold, s, shown=shown[s]):
            progress(f"{shown[s]}: sha256 verified")
        progress(f"parsing {shown[s]}")
        splits[s] = read_letor(files[s], n_features=entry.get("n_features"), labels=entry.get("labels"),
                               shown=shown[s])
    widths = {s: d.n_features for s, d in splits.items()}
    if len(set(widths.values())) > 1:  # no n_features: a sparse file's width is its largest index
        width = max(widths.values())
        progress(f"splits have {widths} features (largest index in each file): the narrower ones are "
                 f"widened to {width} with zeros, as absent features of a sparse LETOR line are")
        splits = {s: d.with_features(np.pad(d.X, ((0, 0), (0, width - d.n_features)))) if d.n_features < width else d
                  for s, d in splits.items()}
    if "vali" not in splits:  # e.g. the full Istella release
        splits["train"], splits["vali"] = carve_validation(splits["train"], seed=source.get("seed", 0))
        progress(f"no validation split: {splits['vali'].n_queries} training queries held out as vali")
    check_disjoint_queries({shown.get(s, f"{shown['train']} (held-out vali)"): splits[s] for s in SPLITS})
    return Fold(splits, entry["labels"][1], {s: _relative_to_root(p, data_root) for s, p in files.items()})


def _clean_as_chakrabarti(fold: Fold, splits: list[str], options: dict, rel_threshold: float) -> None:
    """Zero vectors (unless ``zero_vectors: false``), then near-duplicate good/bad pairs: within
    each query, across each split's queries (``scope: split``), or across the fold's three splits
    together (``scope: fold``: the data set cleaned before it is split); ``side: bad`` drops only
    the non-relevant document of a clash."""
    cosine, side, scope = options.get("cosine", 0.99), options.get("side", "both"), options.get("scope", "query")
    if options.get("zero_vectors", True):
        for s in splits:
            fold.splits[s], fold.dropped[f"{s}.zero_vectors"] = cleaning.drop_zero_vectors(fold.splits[s])
    if scope != "fold":
        for s in splits:
            fold.splits[s], fold.dropped[f"{s}.near_duplicates"] = cleaning.drop_near_duplicate_pairs(
                fold.splits[s], cosine=cosine, rel_threshold=rel_threshold, side=side, scope=scope)
        return
    every = [fold.splits[s] for s in SPLITS]
    drop = cleaning.clash_mask(np.concatenate([d.X for d in every]),
                               np.concatenate([d.y for d in every]) >= rel_threshold, None, cosine, side, "all")
    bounds = np.cumsum([0] + [len(d.y) for d in every])
    for i, s in enumerate(SPLITS):
        if s in splits:
            keep = ~drop[bounds[i]:bounds[i + 1]]
            fold.splits[s] = cleaning.keep_rows(fold.splits[s], keep)
            fold.dropped[f"{s}.near_duplicates"] = int(np.count_nonzero(~keep))


def load_fold(name: str, source: dict, fold: int, progress: Callable[[str], None] = print,
              data_root: str | os.PathLike | None = None) -> Fold:
    """``source`` is what the fetch step recorded (results/data/{dataset}/source.json);
    ``data_root`` the configured data folder its file names are relative to (default: the
    one an older source.json recorded, else ``data``)."""
    data_root = Path(data_root if data_root is not None else source.get("data_root", "data"))
    kind = source["source"]
    if kind == "synthetic":
        sizes = {k: source[k] for k in ("n_queries", "n_features", "corrupt_share", "median_len", "min_len", "max_len") if k in source}
        return Fold(fold_splits(synthetic.make_parts(seed=source["seed"], **sizes), fold), 4)
    if kind == "synthetic_qa":
        sizes = {k: source[k] for k in ("n_questions", "vocab_size") if k in source}
        return Fold(fold_splits(synthetic_qa.make_qa_parts(seed=source["seed"], **sizes), fold), 1)
    if kind == "qa_table":
        return _qa_table_fold(source, fold, data_root)
    return _letor_fold(name, source, fold, progress, data_root)


def clean(fold: Fold, rules: dict, rel_threshold: float) -> None:
    """Apply the configured cleaning to the named splits of a LETOR fold, counting what goes.

    Chakrabarti et al.'s cleaning comes first (``rules["near_duplicates"]`` says how its open
    choices are read; by default zero vectors go, and both documents of a within-query clash),
    then the other rules split by split."""
    if fold.kind != "letor":
        return  # cleaning is defined for LETOR feature vectors
    chakrabarti = [s for s in SPLITS if s in rules.get("chakrabarti", [])]
    if chakrabarti:
        _clean_as_chakrabarti(fold, chakrabarti, rules.get("near_duplicates") or {}, rel_threshold)
    for s in SPLITS:
        if s in rules.get("drop_no_relevant", []):
            fold.splits[s], fold.dropped[f"{s}.queries_without_relevant"] = cleaning.drop_queries_without_relevant(
                fold.splits[s], rel_threshold=rel_threshold)
        if s in rules.get("binarize", []):
            fold.splits[s], fold.dropped[f"{s}.labels_binarized"] = cleaning.binarize_labels(
                fold.splits[s], rel_threshold=rel_threshold)
    if "test" in rules.get("binarize", []):
        fold.max_label = cleaning.binary_label(rel_threshold)  # ERR's top grade on the reported labels
    emptied = [s for s in SPLITS if fold.splits[s].n_queries == 0]
    if emptied:
        removed = {k: v for k, v in fold.dropped.items() if v and k.split(".")[0] in emptied}
        raise EmptySplitError(
            f"cleaning left no query in the {', '.join(emptied)} split(s) (removed: {removed}); with "
            f"cleaning.drop_no_relevant every query needs a document with label >= {rel_threshold} "
            f"(evaluation.rel_threshold): check the labels, the threshold, or the cleaning rules")
