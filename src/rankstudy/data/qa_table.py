"""A user's own CSV/TSV table of questions and answers, turned into
:class:`~rankstudy.data.qadata.QAData` with bag-of-words vocabularies fitted on the training
split only."""

from __future__ import annotations

import csv
import gzip
import os
from pathlib import Path

import numpy as np
import pandas as pd

from rankstudy.data.blocks import offsets_from_qid, positions
from rankstudy.data.qadata import QAData, QATableError

QA_COLUMNS = ("question_id", "question", "answer", "best")

def _separator(path: Path) -> str:
    name = path.name.lower().removesuffix(".gz")
    return "\t" if name.endswith((".tsv", ".tab")) else ","


def _record_lines(path: Path, sep: str) -> np.ndarray:
    """1-based file line where each data record starts (quoted fields may span lines).
    Slow (a Python pass over the file), so only called to word an error message."""
    opener = gzip.open if path.name.lower().endswith(".gz") else open
    starts = []
    with opener(path, "rt", newline="", encoding="utf-8") as f:
        reader = csv.reader(f, delimiter=sep)
        previous_end = 0
        for record in reader:
            if record:  # pandas skips blank lines too
                starts.append(previous_end + 1)
            previous_end = reader.line_num
    return np.asarray(starts[1:], dtype=np.int64)  # drop the header record


def load_qa_table(path: str | os.PathLike, sep: str | None = None) -> pd.DataFrame:
    """Read a CSV (or TSV: ``.tsv``/``.tab``, optionally ``.gz``) question-answer table.

    Required columns: ``question_id, question, answer, best`` (others are kept).
    One row per answer; ``best`` is 0/1 with exactly one 1 per question; every row of a
    question repeats the same question text. Empty or missing (NaN) cells, a missing
    column, a bad ``best`` value, zero or several best answers, or differing question
    texts raise :class:`QATableError` (a ValueError) naming the file and line.
    Returns the table with ``question_id`` as str and ``best`` as int.
    """
    path = Path(path)
    sep = sep or _separator(path)
    try:
        table = pd.read_csv(path, sep=sep, dtype=str, skip_blank_lines=True)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as error:
        kind = "TSV" if sep == "\t" else "CSV"
        raise QATableError(f"{path}: cannot parse as a {kind} table: {error}") from None
    table.columns = [str(c).strip() for c in table.columns]
    missing = [c for c in QA_COLUMNS if c not in table.columns]
    if missing:
        # a header of column names is shown; a first line that is none (another kind of file) is not echoed
        names = (', '.join(table.columns) if len(table.columns) <= 20 and all(len(c) <= 24 for c in table.columns)
                 else f"{len(table.columns)} column(s), not shown (is this a question-answer table?)")
        raise QATableError(f"{path}:1: missing column(s) {', '.join(missing)}; the header has "
                           f"{names}; required: {', '.join(QA_COLUMNS)}")
    if table.empty:
        raise QATableError(f"{path}: the table has a header but no rows")

    def line_of(row: int) -> int:
        lines = _record_lines(path, sep)
        # the csv module and pandas agree on records; if they ever did not, fall back to
        # header + row, which is exact for files without quoted line breaks or blank lines
        return int(lines[row]) if row < len(lines) else row + 2

    for column in QA_COLUMNS:
        values = table[column]
        bad = values.isna().to_numpy() | (values.str.strip() == "").to_numpy()
        if bad.any():
            row = int(np.argmax(bad))
            raise QATableError(f"{path}:{line_of(row)}: column {column!r} is empty or missing (NaN)")

    table["question_id"] = table["question_id"].str.strip()
    best = pd.to_numeric(table["best"].str.strip(), errors="coerce").to_numpy()
    bad = ~np.isin(best, (0.0, 1.0))
    if bad.any():
        row = int(np.argmax(bad))
        raise QATableError(f"{path}:{line_of(row)}: column 'best' must be 0 or 1, got {table['best'].iloc[row]!r}")
    table["best"] = best.astype(np.int64)

    ids = table["question_id"]
    is_best = table["best"].to_numpy() == 1
    # among the best rows, a repeated question id is a second best answer
    second = is_best & ids.where(is_best).duplicated().to_numpy()
    if second.any():
        row = int(np.argmax(second))
        first = int(np.argmax(is_best & (ids == ids.iloc[row]).to_numpy()))
        raise QATableError(f"{path}:{line_of(row)}: question {ids.iloc[row]!r} has a second best answer "
                           f"(the first is on line {line_of(first)}); exactly one per question must have best=1")
    n_best = table.groupby("question_id", sort=False)["best"].transform("sum").to_numpy()
    none = n_best == 0
    if none.any():
        row = int(np.argmax(none))
        raise QATableError(f"{path}:{line_of(row)}: question {ids.iloc[row]!r} has no best answer "
                           f"(exactly one of its rows must have best=1)")
    first_text = table.groupby("question_id", sort=False)["question"].transform("first")
    differs = (table["question"] != first_text).to_numpy()
    if differs.any():
        row = int(np.argmax(differs))
        raise QATableError(f"{path}:{line_of(row)}: question {ids.iloc[row]!r} has a different question "
                           f"text than on its first row")
    return table


def _numeric_question_ids(ids: np.ndarray) -> np.ndarray:
    """int64 qids: the ids themselves when all are integers, else a stable hash of the string
    (the same id maps to the same qid in every split, unlike a per-table numbering)."""
    numbers = pd.to_numeric(pd.Series(ids), errors="coerce").to_numpy()
    if np.all(np.isfinite(numbers)) and np.all(numbers == np.round(numbers)) and np.all(np.abs(numbers) < 2 ** 62):
        return numbers.astype(np.int64)
    hashed = pd.util.hash_array(np.asarray(ids, dtype=object))
    return (hashed & np.uint64(0x7FFFFFFFFFFFFFFF)).astype(np.int64)


class BagOfWords:
    """Word-count vectors for questions and answers with separate vocabularies (Tran et al.,
    Sec. 4): the top ``k`` most frequent non-stop words of the training questions and,
    separately, of the training answers (scikit-learn's CountVectorizer: lower-cased,
    tokens of 2+ word characters, ``stop_words`` as CountVectorizer takes them).
    ``norm``: None (raw counts), "l1" or "l2" row normalisation.
    """

    def __init__(self, k: int = 3000, stop_words: str | list[str] | None = "english",
                 norm: str | None = None) -> None:
        if int(k) < 1:
            raise ValueError(f"k must be >= 1, got {k}")
        if norm not in (None, "l1", "l2"):
            raise ValueError(f"norm must be None, 'l1' or 'l2', got {norm!r}")
        self.k = k
        self.stop_words = stop_words
        self.norm = norm

    def _vectorizer(self):
        # scikit-learn's text module takes ~1 s to import: loaded by the jobs that vectorise,
        # not by every job that reads a fold
        from sklearn.feature_extraction.text import CountVectorizer

        return CountVectorizer(max_features=int(self.k), stop_words=self.stop_words, dtype=np.float64)

    def fit(self, train_questions, train_answers) -> "BagOfWords":
        """Fit both vocabularies; pass each training question once (not once per answer)."""
        self.question_vectorizer_ = self._vectorizer().fit(list(train_questions))
        self.answer_vectorizer_ = self._vectorizer().fit(list(train_answers))
        return self

    def fit_table(self, table: pd.DataFrame) -> "BagOfWords":
        """Fit on a table from :func:`load_qa_table` (each question counted once)."""
        questions = table.drop_duplicates("question_id")["question"]
        return self.fit(questions, table["answer"])

    @property
    def question_vocabulary_(self) -> list[str]:
        return self.question_vectorizer_.get_feature_names_out().tolist()

    @property
    def answer_vocabulary_(self) -> list[str]:
        return self.answer_vectorizer_.get_feature_names_out().tolist()

    def transform(self, table: pd.DataFrame) -> QAData:
        """QAData for a table from :func:`load_qa_table`: answers grouped by question in the
        order questions first appear; docid = the ``answer_id`` column if present, else
        ``<question_id>-<position>``."""
        if not hasattr(self, "question_vectorizer_"):
            raise RuntimeError("BagOfWords is not fitted")
        missing = [c for c in QA_COLUMNS if c not in table.columns]
        if missing:
            raise ValueError(f"table lacks column(s) {', '.join(missing)}")
        ids = table["question_id"].astype(str).to_numpy()
        codes, _ = pd.factorize(ids)
        order, offsets = offsets_from_qid(codes)
        ids = ids[order]
        first_rows = offsets[:-1]
        query_vectors = self.question_vectorizer_.transform(table["question"].to_numpy()[order][first_rows])
        object_vectors = self.answer_vectorizer_.transform(table["answer"].to_numpy()[order])
        if self.norm is not None:
            from sklearn.preprocessing import normalize

            query_vectors = normalize(query_vectors, norm=self.norm)
            object_vectors = normalize(object_vectors, norm=self.norm)
        if "answer_id" in table.columns:
            docid = table["answer_id"].astype(str).to_numpy()[order]
        else:
            docid = np.char.add(np.char.add(ids.astype(str), "-"), positions(offsets).astype(str))
        return QAData(query_vectors=query_vectors, object_vectors=object_vectors,
                      y=table["best"].to_numpy(dtype=np.float64)[order],
                      qid=_numeric_question_ids(ids), docid=docid, offsets=offsets)


def table_parts(table: pd.DataFrame, n_parts: int = 5, seed: int = 0) -> list[pd.DataFrame]:
    """Split a QA table into parts by question (a seeded shuffle of the question ids), so the
    LETOR fold rotation can be applied to a user's table that comes without folds."""
    ids = table["question_id"].drop_duplicates().to_numpy()
    part_of = dict(zip(np.random.default_rng(seed).permutation(ids), np.arange(len(ids)) % n_parts))
    part = table["question_id"].map(part_of).to_numpy()
    return [table[part == k].reset_index(drop=True) for k in range(n_parts)]
