"""Question-answer data: the synthetic generator (deterministic, one best answer per
question, folds), QAData selection and npz round trip, load_qa_table's errors (file and
line), and BagOfWords vocabularies (top-k on train only, stop words dropped)."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp

from rankstudy.data.qa_table import BagOfWords, QATableError, load_qa_table
from rankstudy.data.qadata import QAData
from rankstudy.data.synthetic_qa import make_qa_parts
from rankstudy.data.rotation import fold_splits as qa_fold_splits


@pytest.fixture(scope="module")
def parts():
    return make_qa_parts(seed=3, n_questions=100, vocab_size=80)


def assert_qa_equal(a: QAData, b: QAData) -> None:
    assert (a.query_vectors != b.query_vectors).nnz == 0
    assert (a.object_vectors != b.object_vectors).nnz == 0
    assert a.query_vectors.shape == b.query_vectors.shape
    assert a.object_vectors.shape == b.object_vectors.shape
    for name in ("y", "qid", "docid", "offsets"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name))


# --------------------------------------------------------------------------- synthetic

def test_synthetic_parts_are_deterministic_and_seeded(parts):
    again = make_qa_parts(seed=3, n_questions=100, vocab_size=80)
    for a, b in zip(parts, again):
        assert_qa_equal(a, b)
    other = make_qa_parts(seed=4, n_questions=100, vocab_size=80)
    assert (parts[0].query_vectors != other[0].query_vectors).nnz > 0  # both (20, 80)


def test_synthetic_has_exactly_one_best_answer_per_question(parts):
    full = QAData.concat(parts)
    assert full.n_queries == 100
    assert set(np.unique(full.y)) == {0.0, 1.0}
    np.testing.assert_array_equal(np.add.reduceat(full.y, full.offsets[:-1]), np.ones(100))
    lengths = full.query_lengths
    assert lengths.min() >= 2 and lengths.max() <= 12
    # the best answer is not always at the same position
    best_positions = np.flatnonzero(full.y) - full.offsets[:-1]
    assert len(np.unique(best_positions)) > 3
    # bags of words: non-negative integer counts, every text has words
    for m in (full.query_vectors, full.object_vectors):
        assert m.shape[1] == 80
        assert np.all(m.data > 0) and np.all(m.data == np.round(m.data))
        assert np.all(np.asarray(m.sum(axis=1)).ravel() >= 4)
    # parts are disjoint and their qids are constant within a question
    ids = [set(p.query_ids) for p in parts]
    assert sum(len(s) for s in ids) == len(set().union(*ids)) == 100
    assert np.all(full.qid == np.repeat(full.query_ids, full.query_lengths))


def test_best_answers_share_the_question_topic(parts):
    """Answer topics are only reachable through the data, so check the signal a learned
    projection would find: the best answer's words co-occur with the question's words
    across the set more than other answers' words do (a crude 1-step 'word mapping')."""
    full = QAData.concat(parts)
    Y = full.query_vectors.toarray()
    Z = full.object_vectors.toarray()
    rows = np.repeat(np.arange(full.n_queries), full.query_lengths)
    best = full.y == 1
    cooccur = Y[rows[best]].T @ Z[best]  # (k1, k2) question word x best-answer word counts
    cooccur /= cooccur.sum(axis=1, keepdims=True) + 1e-12
    score = np.einsum("nk,nk->n", Y[rows] @ cooccur, Z) / Z.sum(axis=1)
    assert score[best].mean() > 1.5 * score[~best].mean()


def test_answers_range_is_inclusive_and_checked():
    data = QAData.concat(make_qa_parts(seed=0, n_questions=50, vocab_size=60, answers=(3, 3)))
    assert np.all(data.query_lengths == 3)
    with pytest.raises(ValueError, match="answers"):
        make_qa_parts(answers=(0, 4))
    with pytest.raises(ValueError, match="at least 5 questions"):
        make_qa_parts(n_questions=4)


def test_fold_rotation(parts):
    for fold in (1, 3, 5):
        splits = qa_fold_splits(parts, fold)
        k = fold - 1
        expected = {"train": [k, k + 1, k + 2], "vali": [k + 3], "test": [k + 4]}
        for split, idx in expected.items():
            want = np.concatenate([parts[i % 5].query_ids for i in idx])
            np.testing.assert_array_equal(splits[split].query_ids, want)
    with pytest.raises(ValueError, match="fold"):
        qa_fold_splits(parts, 0)
    with pytest.raises(ValueError, match="5 parts"):
        qa_fold_splits(parts[:4], 1)


# --------------------------------------------------------------------------- QAData

def test_select_queries_keeps_whole_questions(parts):
    data = parts[0]
    keep = np.arange(data.n_queries) % 3 == 1
    sub = data.select_queries(keep)
    assert sub.n_queries == keep.sum()
    np.testing.assert_array_equal(sub.query_ids, data.query_ids[keep])
    q = int(np.flatnonzero(keep)[1])
    a, b = data.offsets[q], data.offsets[q + 1]
    np.testing.assert_array_equal(sub.object_vectors[sub.offsets[1]:sub.offsets[2]].toarray(),
                                  data.object_vectors[a:b].toarray())
    np.testing.assert_array_equal(sub.query_vectors[1].toarray(), data.query_vectors[q].toarray())


def test_qadata_validates_shapes(parts):
    data = parts[0]
    with pytest.raises(ValueError, match="query_vectors rows"):
        QAData(query_vectors=data.query_vectors[:-1], object_vectors=data.object_vectors, y=data.y,
               qid=data.qid, docid=data.docid, offsets=data.offsets)
    with pytest.raises(ValueError, match="same number of rows"):
        QAData(query_vectors=data.query_vectors, object_vectors=data.object_vectors, y=data.y[:-1],
               qid=data.qid, docid=data.docid, offsets=data.offsets)


def test_npz_round_trip(parts, tmp_path):
    data = parts[2]
    path = tmp_path / "sub" / "qa.npz"
    data.to_npz(path)
    assert sorted(p.name for p in path.parent.iterdir()) == ["qa.npz"]  # no temp file left
    back = QAData.from_npz(path)
    assert_qa_equal(data, back)
    assert back.query_vectors.dtype == np.float64 and sp.issparse(back.object_vectors)


def test_from_npz_rejects_other_files(tmp_path):
    path = tmp_path / "other.npz"
    np.savez(path, X=np.zeros(3))
    with pytest.raises(ValueError, match="not a QAData"):
        QAData.from_npz(path)


# --------------------------------------------------------------------------- load_qa_table

GOOD_ROWS = [
    ("q1", "How do I help my son sleep?", "Try a bedtime routine every night.", 1),
    ("q1", "How do I help my son sleep?", "No idea.", 0),
    ("q2", "Is speech therapy useful?", "Speech therapy helped my daughter a lot.", 1),
    ("q2", "Is speech therapy useful?", "Ask your doctor.", 0),
    ("q2", "Is speech therapy useful?", "It depends.", 0),
]


def write_table(path, rows, columns=("question_id", "question", "answer", "best"), sep=","):
    pd.DataFrame(rows, columns=list(columns)).to_csv(path, index=False, sep=sep)
    return path


def test_load_good_table(tmp_path):
    table = load_qa_table(write_table(tmp_path / "qa.csv", GOOD_ROWS))
    assert list(table["best"]) == [1, 0, 1, 0, 0]
    assert table["best"].dtype == np.int64
    assert list(table["question_id"]) == ["q1", "q1", "q2", "q2", "q2"]
    tsv = load_qa_table(write_table(tmp_path / "qa.tsv", GOOD_ROWS, sep="\t"))
    pd.testing.assert_frame_equal(table, tsv)


def test_duplicate_best_names_file_line_and_question(tmp_path):
    rows = list(GOOD_ROWS)
    rows[4] = ("q2", "Is speech therapy useful?", "It depends.", 1)  # second best of q2, line 6
    path = write_table(tmp_path / "dup.csv", rows)
    expected = rf"{re.escape(str(path))}:6: question 'q2' has a second best answer \(the first is on line 4\)"
    with pytest.raises(QATableError, match=expected):
        load_qa_table(path)


def test_line_numbers_follow_quoted_line_breaks(tmp_path):
    rows = list(GOOD_ROWS)
    rows[0] = ("q1", "How do I help my son sleep?", "Routine.\nAnd patience.\nLots.", 1)  # 3 file lines
    rows[4] = ("q2", "Is speech therapy useful?", "It depends.", 1)
    path = write_table(tmp_path / "multi.csv", rows)
    with pytest.raises(QATableError, match=rf"{re.escape(str(path))}:8: question 'q2'"):
        load_qa_table(path)


def test_no_best_answer(tmp_path):
    rows = list(GOOD_ROWS)
    rows[2] = ("q2", "Is speech therapy useful?", "Speech therapy helped.", 0)
    path = write_table(tmp_path / "none.csv", rows)
    with pytest.raises(QATableError, match=rf"{re.escape(str(path))}:4: question 'q2' has no best answer"):
        load_qa_table(path)


def test_missing_column(tmp_path):
    path = write_table(tmp_path / "cols.csv", [r[:3] for r in GOOD_ROWS],
                       columns=("question_id", "question", "answer"))
    with pytest.raises(QATableError, match=rf"{re.escape(str(path))}:1: missing column\(s\) best"):
        load_qa_table(path)


def test_empty_text_and_nan(tmp_path):
    rows = list(GOOD_ROWS)
    rows[3] = ("q2", "Is speech therapy useful?", "   ", 0)
    path = write_table(tmp_path / "empty.csv", rows)
    with pytest.raises(QATableError, match=rf"{re.escape(str(path))}:5: column 'answer' is empty"):
        load_qa_table(path)
    rows = list(GOOD_ROWS)
    rows[1] = ("q1", np.nan, "No idea.", 0)
    path = write_table(tmp_path / "nan.csv", rows)
    with pytest.raises(QATableError, match=rf"{re.escape(str(path))}:3: column 'question' is empty or missing"):
        load_qa_table(path)
    assert issubclass(QATableError, ValueError)


def test_bad_best_value_and_inconsistent_question(tmp_path):
    rows = list(GOOD_ROWS)
    rows[1] = ("q1", "How do I help my son sleep?", "No idea.", 2)
    path = write_table(tmp_path / "best.csv", rows)
    with pytest.raises(QATableError, match=rf"{re.escape(str(path))}:3: column 'best' must be 0 or 1, got '2'"):
        load_qa_table(path)
    rows = list(GOOD_ROWS)
    rows[4] = ("q2", "Is occupational therapy useful?", "It depends.", 0)
    path = write_table(tmp_path / "text.csv", rows)
    with pytest.raises(QATableError, match=rf"{re.escape(str(path))}:6: question .q2. has a different"):
        load_qa_table(path)


# --------------------------------------------------------------------------- BagOfWords

def test_bag_of_words_top_k_on_train_without_stop_words():
    questions = ["the autism autism autism diet", "the the the autism diet sleep", "school diet"]
    answers = ["therapy therapy therapy and and and and", "therapy routine routine", "melatonin"]
    bow = BagOfWords(k=2).fit(questions, answers)
    # 'the' and 'and' are the most frequent words but English stop words
    assert bow.question_vocabulary_ == ["autism", "diet"]
    assert bow.answer_vocabulary_ == ["routine", "therapy"]
    assert BagOfWords(k=2, stop_words=None).fit(questions, answers).answer_vocabulary_ == ["and", "therapy"]


def test_bag_of_words_transform_groups_by_question_and_ignores_unseen_words(tmp_path):
    train = load_qa_table(write_table(tmp_path / "train.csv", GOOD_ROWS))
    bow = BagOfWords(k=3000).fit_table(train)
    assert "speech" in bow.question_vocabulary_ and "routine" in bow.answer_vocabulary_
    assert "doctor" in bow.answer_vocabulary_ and "doctor" not in bow.question_vocabulary_
    # questions interleaved in the table; words never seen in training are dropped
    test_rows = [
        ("7", "Speech speech delays?", "Speech therapy, unseen zebra words.", 0),
        ("9", "Sleep problems?", "Routine.", 1),
        ("7", "Speech speech delays?", "Therapy works.", 1),
    ]
    data = bow.transform(load_qa_table(write_table(tmp_path / "test.csv", test_rows)))
    np.testing.assert_array_equal(data.offsets, [0, 2, 3])
    np.testing.assert_array_equal(data.qid, [7, 7, 9])
    np.testing.assert_array_equal(data.y, [0.0, 1.0, 1.0])
    np.testing.assert_array_equal(data.docid, ["7-0", "7-1", "9-0"])
    speech = bow.question_vocabulary_.index("speech")
    assert data.query_vectors[0, speech] == 2.0 and data.query_vectors.shape == (2, len(bow.question_vocabulary_))
    # the first answer: 'speech' and 'therapy' are answer words; 'unseen', 'zebra', 'words' are not
    assert data.object_vectors[0].sum() == 2.0
    # string question ids hash to the same qid in every table
    again = bow.transform(load_qa_table(write_table(tmp_path / "t2.csv", GOOD_ROWS)))
    first = bow.transform(train)
    np.testing.assert_array_equal(again.qid, first.qid)
    assert len(np.unique(first.query_ids)) == 2


def test_bag_of_words_checks():
    with pytest.raises(ValueError, match="k must be"):
        BagOfWords(k=0)
    with pytest.raises(RuntimeError, match="not fitted"):
        BagOfWords().transform(pd.DataFrame(GOOD_ROWS, columns=["question_id", "question", "answer", "best"]))
