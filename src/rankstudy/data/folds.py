"""One fold's train/vali/test splits, as its data set's source gives them
(rankstudy.data.sources), and the cleaning a protocol applies to them.

File names are recorded relative to ``data_root`` (``Fold.files``), never as one machine's paths."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from rankstudy.data import cleaning, sources
from rankstudy.data.splitfiles import SPLITS



# how Chakrabarti et al.'s cleaning reads the paper's open choices unless cleaning.near_duplicates says otherwise
NEAR_DUPLICATES = {"side": "both", "scope": "query", "cosine": 0.99, "zero_vectors": True}


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


def _clean_as_chakrabarti(fold: Fold, splits: list[str], options: dict, rel_threshold: float) -> None:
    """Zero vectors (unless ``zero_vectors: false``), then near-duplicate good/bad pairs: within
    each query, across each split's queries (``scope: split``), or across the fold's three splits
    together (``scope: fold``: the data set cleaned before it is split); ``side: bad`` drops only
    the non-relevant document of a clash."""
    options = {**NEAR_DUPLICATES, **options}
    cosine, side, scope = options["cosine"], options["side"], options["scope"]
    if options["zero_vectors"]:
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


def load_fold(name: str, record: dict, fold: int, progress: Callable[[str], None] = print,
              data_root: str | os.PathLike | None = None) -> Fold:
    """One fold from the fetch job's ``record`` (results/data/{data}/source.json), read as its
    source says (rankstudy.data.sources); ``data_root`` is the configured data folder its file
    names are relative to (default: the one an older record named, else ``data``)."""
    data_root = data_root if data_root is not None else record.get("data_root", "data")
    return Fold(*sources.read_fold(name, record, fold, data_root, progress))


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
