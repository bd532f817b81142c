"""Score files of a fold run: `scores.{split}.tsv` (qid doc label score), TREC run files and the
qrels beside them, so a run can be handed to trec_eval or ranx as it is."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from rankstudy.util.atomic import write_columns
from rankstudy.data.rankdata import RankData
from rankstudy.data.blocks import positions

# written without pandas: an evaluate job's cost is its metric arithmetic, not pandas' import (0.7 s)


def write_scores(data: RankData, scores: np.ndarray, path: str | Path) -> Path:
    # repr-exact floats so a recomputation of the metrics from this file gives the same numbers
    return write_columns({"qid": data.qid, "doc": data.docid, "label": data.y, "score": scores}, path, sep="\t")


def write_trec_run(data: RankData, scores: np.ndarray, path: str | Path, tag: str) -> Path:
    """`qid Q0 doc rank score tag`, ranked by descending score; ties keep input order."""
    scores = np.asarray(scores, dtype=np.float64)
    query_index = np.repeat(np.arange(data.n_queries), data.query_lengths)
    order = np.lexsort((-scores, query_index))  # stable: ties keep input order; NaN last
    n = len(scores)
    return write_columns({"qid": data.qid[order], "q0": np.full(n, "Q0"), "doc": data.docid[order],
                          "rank": positions(data.offsets) + 1, "score": scores[order], "tag": np.full(n, tag)},
                         path, sep=" ", header=False)


def write_qrels(data: RankData, path: str | Path) -> Path:
    """TREC qrels of the split (`qid 0 doc label`, labels as integers where they are whole), the
    judgements its run file is scored against: `ranx.Qrels.from_file(path, kind="trec")`."""
    labels = data.y.astype(np.int64) if np.all(data.y == np.round(data.y)) else data.y
    return write_columns({"qid": data.qid, "iter": np.zeros(len(labels), dtype=np.int64), "doc": data.docid,
                          "label": labels}, path, sep=" ", header=False)
