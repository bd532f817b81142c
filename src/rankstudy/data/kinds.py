"""The kinds of data a split can hold, by name, and the binary cache that remembers which.

* ``letor``: :class:`~rankstudy.data.rankdata.RankData`, dense feature vectors per document;
* ``qa``: :class:`~rankstudy.data.qadata.QAData`, separate question and answer vectors.

Every split class has a ``kind`` class attribute, ``n_features``, ``feature_shape`` (with
``describe_features`` for messages), ``feature_arrays()``, ``select_queries``, ``concat``,
``to_npz`` and ``from_npz``; the cache stores the kind, so a reader never
has to guess it from the arrays present.
"""

from __future__ import annotations

import os

import numpy as np

from rankstudy.data.qadata import QAData
from rankstudy.data.rankdata import RankData
from rankstudy.util.names import lookup

DATA_KINDS: dict[str, type] = {"letor": RankData, "qa": QAData}


def data_class(kind: str) -> type:
    return lookup(DATA_KINDS, kind, "data kind")


def stored_kind(path: str | os.PathLike) -> str:
    """The kind recorded in a cached split (caches written before kinds were recorded: QA
    caches had a ``format`` entry, LETOR ones nothing)."""
    with np.load(path, allow_pickle=False) as z:
        if "kind" in z.files:
            return str(z["kind"])
        return "qa" if "format" in z.files else "letor"


def load_split(path: str | os.PathLike):
    """A cached split, as the class of its recorded kind."""
    return data_class(stored_kind(path)).from_npz(path)


def save_split(data, path: str | os.PathLike) -> None:
    data.to_npz(path)
