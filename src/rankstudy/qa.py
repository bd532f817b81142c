"""Question-answer data in the separate representation of Tran et al. (2011, Sec. 2).

Each question q has a bag-of-words vector y_q and each of its answers o a vector
z_o, from two different vocabularies; exactly one answer per question is the best
one (label 1, the others 0), as in the paper's Yahoo! Answers data (Sec. 4).

* :class:`QAData` -- one split: question vectors (one row per question), answer
  vectors (one row per answer, grouped by question as in
  :class:`rankstudy.data.RankData`), labels and ids; a one-file ``.npz`` cache.
* :func:`make_qa_parts` -- a deterministic synthetic question-answer benchmark in
  five parts, rotated into folds by :func:`qa_fold_splits` as LETOR does.
* :func:`load_qa_table` + :class:`BagOfWords` -- a user's own CSV/TSV table of
  questions and answers turned into :class:`QAData` with vocabularies fitted on
  the training split only.
"""

from __future__ import annotations

import csv
import gzip
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import scipy.sparse as sp
from sklearn.feature_extraction.text import CountVectorizer
from sklearn.preprocessing import normalize

from rankstudy import atomic
from rankstudy.data import QueryBlocks, offsets_from_qid, positions
from rankstudy.synthetic import N_PARTS, fold_parts

QA_COLUMNS = ("question_id", "question", "answer", "best")
NPZ_FORMAT = "rankstudy.qa"
_SPARSE_KEYS = ("data", "indices", "indptr", "shape")


def _as_csr(matrix, name: str) -> sp.csr_matrix:
    out = sp.csr_matrix(matrix, dtype=np.float64)
    out.sum_duplicates()  # canonical form: equal matrices compare and save identically
    if not np.all(np.isfinite(out.data)):
        raise ValueError(f"QAData: {name} holds NaN or infinite values")
    return out


@dataclass
class QAData(QueryBlocks):
    query_vectors: sp.csr_matrix  # (n_queries, k1) one row per question
    object_vectors: sp.csr_matrix  # (n_docs, k2) one row per answer, grouped by question
    y: np.ndarray  # (n_docs,) 1.0 for the best answer, else 0.0
    qid: np.ndarray  # (n_docs,) int64 question id of each answer (constant within a block)
    docid: np.ndarray  # (n_docs,) str answer id
    offsets: np.ndarray  # (n_queries + 1,) int64 question boundaries

    def __post_init__(self) -> None:
        self.query_vectors = _as_csr(self.query_vectors, "query_vectors")
        self.object_vectors = _as_csr(self.object_vectors, "object_vectors")
        self.y = np.asarray(self.y, dtype=np.float64)
        self.qid = np.asarray(self.qid, dtype=np.int64)
        self.docid = np.asarray(self.docid).astype(str)
        self.offsets = np.asarray(self.offsets, dtype=np.int64)
        n = self.object_vectors.shape[0]
        if not (len(self.y) == len(self.qid) == len(self.docid) == n):
            raise ValueError("QAData: object_vectors, y, qid and docid must have the same number of rows")
        if self.offsets[0] != 0 or self.offsets[-1] != n or np.any(np.diff(self.offsets) <= 0):
            raise ValueError("QAData: offsets must start at 0, end at n_docs and be strictly increasing")
        if self.query_vectors.shape[0] != len(self.offsets) - 1:
            raise ValueError(f"QAData: {self.query_vectors.shape[0]} query_vectors rows for "
                             f"{len(self.offsets) - 1} questions")

    @property
    def n_docs(self) -> int:
        return len(self.y)

    def select_queries(self, keep: np.ndarray) -> "QAData":
        """A new QAData holding only the questions where ``keep`` (bool, per question) is true."""
        rows, offsets = self.query_rows(keep)
        return QAData(query_vectors=self.query_vectors[np.asarray(keep, dtype=bool)],
                      object_vectors=self.object_vectors[rows], y=self.y[rows], qid=self.qid[rows],
                      docid=self.docid[rows], offsets=offsets)

    def to_npz(self, path: str | os.PathLike) -> None:
        """One .npz, written atomically; each CSR matrix as the data/indices/indptr/shape
        arrays scipy.sparse.save_npz uses, prefixed ``query_vectors_`` / ``object_vectors_``."""
        arrays = {"format": np.array(NPZ_FORMAT), "y": self.y, "qid": self.qid,
                  "docid": self.docid, "offsets": self.offsets}
        for name in ("query_vectors", "object_vectors"):
            matrix = getattr(self, name)
            arrays.update({f"{name}_data": matrix.data, f"{name}_indices": matrix.indices,
                           f"{name}_indptr": matrix.indptr, f"{name}_shape": np.array(matrix.shape)})
        with atomic.atomic_path(path, suffix=".npz") as tmp:
            np.savez(tmp, **arrays)

    @classmethod
    def from_npz(cls, path: str | os.PathLike) -> "QAData":
        with np.load(path, allow_pickle=False) as z:
            if "format" not in z.files or str(z["format"]) != NPZ_FORMAT:
                raise ValueError(f"{path}: not a QAData .npz (no format={NPZ_FORMAT!r} entry)")
            matrices = {
                name: sp.csr_matrix((z[f"{name}_data"], z[f"{name}_indices"], z[f"{name}_indptr"]),
                                    shape=tuple(z[f"{name}_shape"]))
                for name in ("query_vectors", "object_vectors")
            }
            return cls(**matrices, y=z["y"], qid=z["qid"], docid=z["docid"], offsets=z["offsets"])


def concat_qa(parts: list[QAData]) -> QAData:
    """Stack question-grouped parts into one QAData (questions keep their order)."""
    lengths = np.concatenate([p.query_lengths for p in parts])
    return QAData(
        query_vectors=sp.vstack([p.query_vectors for p in parts], format="csr"),
        object_vectors=sp.vstack([p.object_vectors for p in parts], format="csr"),
        y=np.concatenate([p.y for p in parts]), qid=np.concatenate([p.qid for p in parts]),
        docid=np.concatenate([p.docid for p in parts]),
        offsets=np.concatenate([[0], np.cumsum(lengths)]),
    )


def qa_fold_splits(parts: list[QAData], fold: int) -> dict[str, QAData]:
    """Fold ``fold`` (1..5): train on parts k, k+1, k+2, validate on k+3, test on k+4 (mod 5)."""
    if len(parts) != N_PARTS:
        raise ValueError(f"expected {N_PARTS} parts, got {len(parts)}")
    return {split: concat_qa([parts[i] for i in idx]) for split, idx in fold_parts(fold).items()}


# --------------------------------------------------------------------------- synthetic data

def _topic_word_distributions(rng: np.random.Generator, vocab_size: int, n_topics: int,
                              common_fraction: float) -> np.ndarray:
    """(n_topics + 1, vocab_size) word distributions: one per topic on its own block of
    words, the last one on topic-free common words (Zipf-like). Columns are shuffled, so a
    word's index says nothing about its topic and the question and answer vocabularies
    (drawn separately) relate only through the shared topics."""
    n_common = max(1, int(round(common_fraction * vocab_size)))
    if vocab_size - n_common < n_topics:
        raise ValueError(f"vocab_size={vocab_size} leaves fewer topical words than n_topics={n_topics}")
    phi = np.zeros((n_topics + 1, vocab_size))
    block_sizes = np.diff(np.linspace(0, vocab_size - n_common, n_topics + 1).astype(int))
    block = np.repeat(np.arange(n_topics), block_sizes)  # topic of each topical word
    topical = n_common + np.arange(len(block))
    phi[block, topical] = rng.dirichlet(np.full(len(block), 0.5))  # one Dirichlet draw, rescaled per topic below
    phi[:n_topics] /= phi[:n_topics].sum(axis=1, keepdims=True)
    phi[n_topics, :n_common] = 1.0 / np.arange(1, n_common + 1)
    phi[n_topics] /= phi[n_topics].sum()
    return phi[:, rng.permutation(vocab_size)]


def _bags_of_words(rng: np.random.Generator, mixtures: np.ndarray, phi: np.ndarray,
                   min_words: int, mean_extra_words: float) -> sp.csr_matrix:
    """Word counts of texts drawn from topic ``mixtures`` (n, n_topics + 1), all at once."""
    p = mixtures @ phi
    p /= p.sum(axis=1, keepdims=True)
    n_words = min_words + rng.poisson(mean_extra_words, len(p))
    return sp.csr_matrix(rng.multinomial(n_words, p).astype(np.float64))


def make_qa_parts(seed: int = 0, n_questions: int = 400, vocab_size: int = 300,
                  answers: tuple[int, int] = (2, 12), *, n_topics: int = 10,
                  common_share: float = 0.3, common_fraction: float = 0.2,
                  focus: float = 0.8, best_share: float = 0.6, weak_share: float = 0.3,
                  weak_fraction: float = 0.4, question_words: tuple[int, float] = (4, 6.0),
                  answer_words: tuple[int, float] = (6, 14.0)) -> list[QAData]:
    """Five disjoint parts of a synthetic question-answer set, one best answer per question.

    Every text is a bag of words from a topic mixture: a share ``common_share`` of its
    words are topic-free common words, the rest come from its topics. A question puts
    ``focus`` of its topical mass on one main topic t (the remainder spread by a flat
    Dirichlet draw over all topics). Its answers (between ``answers[0]`` and ``answers[1]``
    of them, inclusive, the best at a random position):

    * best: ``best_share`` on t and ``focus - best_share`` on another topic;
    * weakly related (a ``weak_fraction`` of the others): ``weak_share`` on t and
      ``focus - weak_share`` on another topic;
    * off-topic: ``focus`` on another topic.

    Questions and answers use different vocabularies of ``vocab_size`` words each
    (with a ``common_fraction`` of common words), linked only through the topics, so a
    ranker must learn the word mapping (e.g. the A, B projections of Tran Eqs. 2-3);
    a random ranking scores about the mean of H_L / L in MRR. ``question_words`` and
    ``answer_words`` are (minimum, mean extra) word counts per text (Poisson extra).
    Deterministic for a given seed.
    """
    low, high = (int(a) for a in answers)
    if n_questions < N_PARTS:
        raise ValueError(f"need at least {N_PARTS} questions, got {n_questions}")
    if not 1 <= low <= high:
        raise ValueError(f"answers must be (min, max) with 1 <= min <= max, got {answers}")
    if n_topics < 2:
        raise ValueError("need at least 2 topics, so that off-topic answers exist")
    if not 0.0 <= weak_share <= best_share <= focus <= 1.0:
        raise ValueError("need 0 <= weak_share <= best_share <= focus <= 1")
    rng = np.random.default_rng(seed)
    phi_question = _topic_word_distributions(rng, vocab_size, n_topics, common_fraction)
    phi_answer = _topic_word_distributions(rng, vocab_size, n_topics, common_fraction)

    lengths = rng.integers(low, high + 1, n_questions)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    n = int(offsets[-1])
    question_of_answer = np.repeat(np.arange(n_questions), lengths)
    best_position = rng.integers(0, lengths)  # uniform in 0..length-1 for each question
    is_best = positions(offsets) == best_position[question_of_answer]
    is_weak = ~is_best & (rng.random(n) < weak_fraction)

    main_topic = rng.integers(0, n_topics, n_questions)
    # a different topic for every answer: shift the question's topic by 1..n_topics-1
    other_topic = (main_topic[question_of_answer] + rng.integers(1, n_topics, n)) % n_topics

    def mixtures(count: int, topic_shares: np.ndarray) -> np.ndarray:
        background = (1.0 - focus) * rng.dirichlet(np.ones(n_topics), count)
        topical = topic_shares + background
        return np.hstack([(1.0 - common_share) * topical, np.full((count, 1), common_share)])

    question_topics = np.zeros((n_questions, n_topics))
    question_topics[np.arange(n_questions), main_topic] = focus
    share_of_main = np.where(is_best, best_share, np.where(is_weak, weak_share, 0.0))
    answer_topics = np.zeros((n, n_topics))
    answer_topics[np.arange(n), main_topic[question_of_answer]] += share_of_main
    answer_topics[np.arange(n), other_topic] += focus - share_of_main

    query_vectors = _bags_of_words(rng, mixtures(n_questions, question_topics), phi_question, *question_words)
    object_vectors = _bags_of_words(rng, mixtures(n, answer_topics), phi_answer, *answer_words)

    qid = (1 + np.arange(n_questions, dtype=np.int64))[question_of_answer]
    docid = np.char.add(np.char.add(np.char.add("Q", qid.astype(str)), "-A"), positions(offsets).astype(str))
    full = QAData(query_vectors=query_vectors, object_vectors=object_vectors,
                  y=is_best.astype(np.float64), qid=qid, docid=docid, offsets=offsets)
    part_of_question = np.repeat(np.arange(N_PARTS),
                                 [len(s) for s in np.array_split(np.arange(n_questions), N_PARTS)])
    return [full.select_queries(part_of_question == k) for k in range(N_PARTS)]


# --------------------------------------------------------------------------- a user's QA table

class QATableError(ValueError):
    """Malformed question-answer table; the message names ``path:line``."""


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
        raise QATableError(f"{path}:1: missing column(s) {', '.join(missing)}; the header has "
                           f"{', '.join(table.columns)}; required: {', '.join(QA_COLUMNS)}")
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

    def _vectorizer(self) -> CountVectorizer:
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
