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
import zipfile
import zlib
from pathlib import Path

import numpy as np

from rankstudy.data.rankdata import RankData
from rankstudy.util.atomic import DamagedFile
from rankstudy.util.lazy import LazyRegistry
from rankstudy.util.names import lookup

# QAData is loaded when a QA split is read: it brings scipy.sparse, which LETOR jobs do not use
DATA_KINDS: dict[str, type] = LazyRegistry({"letor": RankData, "qa": "rankstudy.data.qadata:QAData"})


def data_class(kind: str) -> type:
    return lookup(DATA_KINDS, kind, "data kind")


def stored_kind(path: str | os.PathLike) -> str:
    """The kind recorded in a cached split (caches written before kinds were recorded: QA
    caches had a ``format`` entry, LETOR ones nothing)."""
    with np.load(path, allow_pickle=False) as z:
        if "kind" in z.files:
            return str(z["kind"])
        return "qa" if "format" in z.files else "letor"


# what reading an .npz that was cut short or overwritten raises (zip, npy format, decompression)
_UNREADABLE = (zipfile.BadZipFile, EOFError, ValueError, KeyError, zlib.error)


class DamagedCache(DamagedFile):
    """A cached split that could not be read, and was removed so that the next run makes it again."""


def load_split(path: str | os.PathLike):
    """A cached split, as the class of its recorded kind. A cache that cannot be read (truncated,
    overwritten) is removed, and DamagedCache names it: the next run makes it again, instead of
    every run failing on it until it is deleted by hand."""
    try:
        return data_class(stored_kind(path)).from_npz(path)
    except _UNREADABLE as exc:
        Path(path).unlink(missing_ok=True)
        raise DamagedCache(f"{path}: damaged cache, cannot be read ({type(exc).__name__}: {str(exc)[:200]}); "
                           f"it was removed: run again and it is made anew") from None


def save_split(data, path: str | os.PathLike) -> None:
    data.to_npz(path)
