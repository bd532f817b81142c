"""The embedded synthetic LETOR-style data set and its fold rotation."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.linear_model import Ridge

from rankstudy.data.blocks import pad
from rankstudy.features.normalize import Normalizer
from rankstudy.features.pairs import expand, pair_correlations, select_pairs
from rankstudy.data.rankdata import RankData
from rankstudy.data.synthetic import feature_roles, make_parts
from rankstudy.data.rotation import fold_parts, fold_splits


@pytest.fixture(scope="module")
def parts():
    return make_parts(seed=0)


def test_deterministic_for_a_seed(parts):
    again = make_parts(seed=0)
    for a, b in zip(parts, again):
        for field in ("X", "y", "qid", "docid", "offsets"):
            np.testing.assert_array_equal(getattr(a, field), getattr(b, field))
    other = make_parts(seed=1)
    assert not np.array_equal(parts[0].y, other[0].y) or parts[0].X.shape != other[0].X.shape


def test_shape_ids_and_size(parts):
    assert len(parts) == 5
    assert [p.n_queries for p in parts] == [50] * 5
    assert all(p.n_features == 24 for p in parts)
    total = sum(p.X.shape[0] for p in parts)
    assert 9_000 <= total <= 15_000
    qids = np.concatenate([p.query_ids for p in parts])
    assert len(np.unique(qids)) == 250  # unique across parts
    p = parts[2]
    q, k = p.qid[p.offsets[1] + 4], 4
    assert p.docid[p.offsets[1] + 4] == f"D{q}-{k}"


def test_labels_are_graded_skewed_and_tied(parts):
    y = np.concatenate([p.y for p in parts])
    assert set(np.unique(y)) == {0.0, 1.0, 2.0, 3.0, 4.0}
    share = np.bincount(y.astype(int)) / len(y)
    assert share[0] >= 0.4 and share[4] <= 0.05
    assert np.all(np.diff(share) < 0)  # fewer documents at each higher grade
    # ties within queries: far fewer distinct labels than documents
    p = parts[0]
    distinct = [len(np.unique(p.y[s:e])) for s, e in zip(p.offsets[:-1], p.offsets[1:])]
    assert np.mean(np.array(distinct) < p.query_lengths) > 0.9


def test_query_length_range(parts):
    lengths = np.concatenate([p.query_lengths for p in parts])
    assert lengths.min() >= 3 and lengths.max() <= 150
    assert lengths.min() <= 5 and lengths.max() >= 120
    assert np.median(lengths) < lengths.mean()  # right-skewed like LETOR


def test_constant_and_pairwise_only_features(parts):
    roles = feature_roles()
    data = RankData.concat(parts)
    zero_col, one_col, query_col = roles["constant"]
    np.testing.assert_array_equal(data.X[:, zero_col], 0.0)
    np.testing.assert_array_equal(data.X[:, one_col], 1.0)
    qcol = data.X[:, query_col]
    assert np.all(np.minimum.reduceat(qcol, data.offsets[:-1]) == np.maximum.reduceat(qcol, data.offsets[:-1]))
    assert len(np.unique(qcol)) == data.n_queries
    # each pairwise feature alone is (nearly) uncorrelated with the label; its partner product is not
    rho = pair_correlations(data.X, data.y).set_index(["i", "j"])["rho"]
    pw = roles["pairwise"]
    for a, b in zip(pw[0::2], pw[1::2]):
        assert abs(np.corrcoef(data.X[:, a], data.y)[0, 1]) < 0.05
        assert abs(np.corrcoef(data.X[:, b], data.y)[0, 1]) < 0.05
        assert rho.loc[(a, b)] > 0.15
    lin = roles["linear"]
    assert max(abs(np.corrcoef(data.X[:, c], data.y)[0, 1]) for c in lin) > 0.2


def test_fold_rotation(parts):
    assert fold_parts(1) == {"train": [0, 1, 2], "vali": [3], "test": [4]}
    assert fold_parts(2) == {"train": [1, 2, 3], "vali": [4], "test": [0]}
    assert fold_parts(5) == {"train": [4, 0, 1], "vali": [2], "test": [3]}
    part_qids = [set(p.query_ids.tolist()) for p in parts]
    test_owner = []
    for fold in range(1, 6):
        s = fold_splits(parts, fold)
        q = {k: set(v.query_ids.tolist()) for k, v in s.items()}
        assert not (q["train"] & q["vali"]) and not (q["train"] & q["test"]) and not (q["vali"] & q["test"])
        assert q["train"] | q["vali"] | q["test"] == set().union(*part_qids)
        test_owner.append([i for i, pq in enumerate(part_qids) if pq == q["test"]])
        assert q["train"] == part_qids[(fold - 1) % 5] | part_qids[fold % 5] | part_qids[(fold + 1) % 5]
        assert q["vali"] == part_qids[(fold + 2) % 5]
    assert sorted(i for owner in test_owner for i in owner) == [0, 1, 2, 3, 4]  # each part tested once
    with pytest.raises(ValueError):
        fold_splits(parts, 0)


def ndcg_at_10(scores: np.ndarray, data) -> float:
    """Mean NDCG@10 (exp gain) over queries with at least one relevant document."""
    s, _ = pad(scores, data.offsets, fill=-np.inf)
    g, _ = pad(data.y, data.offsets)
    disc = 1.0 / np.log2(np.arange(2, 12))
    top = np.argsort(-s, axis=1, kind="stable")[:, :10]
    dcg = ((2.0 ** np.take_along_axis(g, top, axis=1) - 1) * disc[:top.shape[1]]).sum(axis=1)
    ideal = ((2.0 ** -np.sort(-g, axis=1)[:, :10] - 1) * disc[:top.shape[1]]).sum(axis=1)
    ok = ideal > 0
    return float(np.mean(dcg[ok] / ideal[ok]))


def test_second_order_features_help(parts):
    split = fold_splits(parts, 1)
    norm = Normalizer("zscore").fit(split["train"])
    train, test = norm.transform(split["train"]), norm.transform(split["test"])
    pairs = select_pairs(pair_correlations(train.X, train.y), 0.05)
    roles = feature_roles()
    planted = set(zip(roles["pairwise"][0::2], roles["pairwise"][1::2]))
    assert planted <= set(map(tuple, pairs[["i", "j"]].to_numpy().tolist()))
    linear = ndcg_at_10(Ridge(alpha=1.0).fit(train.X, train.y).predict(test.X), test)
    tr2, te2 = expand(train, pairs), expand(test, pairs)
    quadratic = ndcg_at_10(Ridge(alpha=1.0).fit(tr2.X, tr2.y).predict(te2.X), te2)
    assert quadratic > linear + 0.05, (linear, quadratic)
