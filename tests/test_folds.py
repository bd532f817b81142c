"""Loading one fold from each kind of source, and the cleaning counts."""

from __future__ import annotations

import numpy as np

from rankstudy.data import synthetic
from rankstudy.data.rotation import fold_splits
from rankstudy.data.folds import clean, load_fold
from rankstudy.data.sources import carve_validation


def test_synthetic_fold_matches_the_generator_and_fingerprint_is_stable():
    source = {"source": "synthetic", "seed": 3, "n_queries": 50, "n_features": 17}
    fold = load_fold("synthetic", source, 2)
    expected = fold_splits(synthetic.make_parts(seed=3, n_queries=50, n_features=17), 2)
    np.testing.assert_array_equal(fold.splits["test"].X, expected["test"].X)
    assert fold.max_label == 4 and fold.n_features == 17
    assert fold.fingerprint() == load_fold("synthetic", source, 2).fingerprint() != load_fold("synthetic", source, 3).fingerprint()


def test_qa_fold_counts_question_and_answer_vocabularies():
    fold = load_fold("synthetic_qa", {"source": "synthetic_qa", "seed": 0, "n_questions": 60, "vocab_size": 40}, 1)
    assert fold.kind == "qa" and fold.max_label == 1 and fold.n_features == 80
    clean(fold, {"drop_no_relevant": ["train"]}, 1.0)  # a no-op on QA data
    assert fold.dropped == {}


def test_cleaning_counts_dropped_queries():
    fold = load_fold("synthetic", {"source": "synthetic", "seed": 0, "n_queries": 100, "n_features": 17}, 1)
    train = fold.splits["train"]
    train.y[: train.offsets[2]] = 0  # plant two queries without a relevant document
    no_relevant = int((np.maximum.reduceat(train.y, train.offsets[:-1]) < 1).sum())
    assert no_relevant >= 2
    clean(fold, {"drop_no_relevant": ["train"]}, 1.0)
    assert fold.dropped == {"train.queries_without_relevant": no_relevant}
    assert fold.splits["train"].n_queries == train.n_queries - no_relevant


def test_carved_validation_is_disjoint_and_seeded():
    train = synthetic.make_parts(seed=0, n_queries=50, n_features=17)[0]
    a, b = carve_validation(train, seed=1)
    assert a.n_queries + b.n_queries == train.n_queries and b.n_queries == 2
    assert not set(a.query_ids) & set(b.query_ids)
    assert list(carve_validation(train, seed=1)[1].query_ids) == list(b.query_ids)


def test_chakrabarti_cleaning_before_the_split_looks_across_splits():
    """scope fold: a training document whose copy sits in the test split with the other label is
    a clash (within queries it is not); only the listed splits lose documents; zero_vectors false
    keeps all-zero rows."""
    source = {"source": "synthetic", "seed": 1, "n_queries": 60, "n_features": 17}

    def planted():
        fold = load_fold("synthetic", source, 1)
        fold.splits["train"].y[0], fold.splits["test"].y[0] = 2.0, 0.0
        fold.splits["test"].X[0] = fold.splits["train"].X[0] * 1.5  # cosine 1, across splits
        fold.splits["vali"].X[0] = 0.0
        return fold

    within, before = planted(), planted()
    first = within.splits["train"].docid[0]
    sizes = {s: len(d.y) for s, d in within.splits.items()}
    clean(within, {"chakrabarti": ["train", "vali", "test"]}, 1.0)
    clean(before, {"chakrabarti": ["train", "vali"], "near_duplicates": {"scope": "fold", "zero_vectors": False}}, 1.0)
    assert first in within.splits["train"].docid  # no clash inside its query
    assert first not in before.splits["train"].docid  # its copy in test clashes with it
    assert len(before.splits["test"].y) == sizes["test"] and "test.near_duplicates" not in before.dropped
    assert "vali.zero_vectors" not in before.dropped and within.dropped["vali.zero_vectors"] == 1
    assert len(before.splits["vali"].y) == sizes["vali"] - before.dropped["vali.near_duplicates"]


def test_fold_meta_records_the_near_duplicate_options_as_given():
    from types import SimpleNamespace

    from rankstudy.pipeline.records import FoldMeta
    fold = load_fold("synthetic", {"source": "synthetic", "seed": 0, "n_queries": 40, "n_features": 17}, 1)
    rules = {"chakrabarti": ["train"], "near_duplicates": {"side": "bad", "cosine": 0.9}}
    meta = FoldMeta.of(SimpleNamespace(dataset="synthetic", fold=1, files={}), fold, rules, 1.0)
    assert meta.cleaning == {"chakrabarti": ["train"], "near_duplicates": {"side": "bad", "cosine": 0.9}}
