"""Score files of a fold run: `scores.{split}.tsv` (qid doc label score), TREC run files and the
qrels beside them, so a run can be handed to trec_eval or ranx as it is."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from rankstudy.util.atomic import atomic_path, write_csv
from rankstudy.data.rankdata import RankData
from rankstudy.data.blocks import positions


def scores_frame(data: RankData, scores: np.ndarray) -> pd.DataFrame:
    return pd.DataFrame({"qid": data.qid, "doc": data.docid, "label": data.y, "score": scores})


def write_scores(data: RankData, scores: np.ndarray, path: str | Path) -> Path:
    # repr-exact floats so a recomputation of the metrics from this file gives the same numbers
    return write_csv(scores_frame(data, scores), path, sep="\t", float_format="%.17g")


def write_trec_run(data: RankData, scores: np.ndarray, path: str | Path, tag: str) -> Path:
    """`qid Q0 doc rank score tag`, ranked by descending score; ties keep input order."""
    frame = scores_frame(data, scores)
    frame["query_index"] = np.repeat(np.arange(data.n_queries), data.query_lengths)
    frame = frame.sort_values(["query_index", "score"], ascending=[True, False], kind="stable")
    frame["rank"] = positions(data.offsets) + 1
    frame["q0"], frame["tag"] = "Q0", tag
    with atomic_path(path) as tmp:
        frame[["qid", "q0", "doc", "rank", "score", "tag"]].to_csv(
            tmp, sep=" ", header=False, index=False, float_format="%.17g")
    return Path(path)


def write_qrels(data: RankData, path: str | Path) -> Path:
    """TREC qrels of the split (`qid 0 doc label`, labels as integers where they are whole), the
    judgements its run file is scored against: `ranx.Qrels.from_file(path, kind="trec")`."""
    labels = data.y.astype(np.int64) if np.all(data.y == np.round(data.y)) else data.y
    frame = pd.DataFrame({"qid": data.qid, "iter": 0, "doc": data.docid, "label": labels})
    with atomic_path(path) as tmp:
        frame.to_csv(tmp, sep=" ", header=False, index=False)
    return Path(path)
