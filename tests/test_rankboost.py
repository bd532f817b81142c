"""RankBoost: one round by hand, the pair potentials and the binned r(f, theta) against brute
force over the pairs, the whole fit against today's pair-per-weight exhaustive search (commit
8fda413's code, kept here as the reference), that it learns on the synthetic data, save/load, and
parameter errors."""

from __future__ import annotations

import time

import numpy as np
import pytest

from rankstudy.data import synthetic
from rankstudy.data.rankdata import RankData
from rankstudy.evaluation.metrics import per_query
from rankstudy.rankers.pair_potentials import CrucialPairs
from rankstudy.rankers.rankboost import R_CLIP, RankBoost
from rankstudy.rankers.registry import load_ranker, make_ranker
from rankstudy.rankers.threshold_bins import all_r, bin_features, code_dtype


def rankdata(X, y, lengths) -> RankData:
    X, y = np.asarray(X, dtype=float), np.asarray(y, dtype=float)
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    return RankData(X=X, y=y, qid=np.repeat(np.arange(len(lengths)), lengths),
                    docid=np.arange(len(y)).astype(str), offsets=offsets)


def mean_ndcg10(scores, data: RankData) -> float:
    return float(per_query(scores, data.y, data.offsets, ["ndcg@10"])["ndcg@10"].mean())


# --------------------------------------------------------------------------- the reference

def crucial_pairs(y, offsets):
    """(hi, lo, D): every within-query pair with y[hi] > y[lo] and the initial distribution,
    uniform within a query and equal across the queries that have a pair (brute force)."""
    his, los, weights = [], [], []
    for a, b in zip(offsets[:-1], offsets[1:]):
        hi, lo = np.nonzero(y[a:b, None] > y[None, a:b])
        if len(hi):
            his.append(hi + a)
            los.append(lo + a)
            weights.append(np.full(len(hi), 1.0 / len(hi)))
    D = np.concatenate(weights)
    return np.concatenate(his), np.concatenate(los), D / D.sum()


def pair_pi(hi, lo, D, n):
    return np.bincount(hi, D, n) - np.bincount(lo, D, n)


def reference_candidates(X, max_thresholds):
    """Commit 8fda413's threshold_candidates: the column-wise descending argsort of X and, per
    candidate, the sorted position k below which x_f > theta."""
    n = X.shape[0]
    order = np.argsort(-X, axis=0, kind="stable")
    Xs = np.take_along_axis(X, order, axis=0)
    change = Xs[:-1] > Xs[1:]
    ks, fs = [], []
    for f in range(X.shape[1]):
        k = np.flatnonzero(change[:, f])
        if max_thresholds is not None and len(k) > max_thresholds:
            targets = np.linspace(0, n - 1, max_thresholds + 2)[1:-1]
            k = np.unique(k[np.minimum(np.searchsorted(k, targets), len(k) - 1)])
        ks.append(k)
        fs.append(np.full(len(k), f))
    k, f = np.concatenate(ks), np.concatenate(fs)
    above, below = Xs[k, f], Xs[k + 1, f]
    theta = 0.5 * above + 0.5 * below
    theta = np.where(theta >= above, below, theta)
    return order, k, f, theta


def reference_fit(X, y, offsets, n_rounds, max_thresholds=256):
    """Commit 8fda413's RankBoost loop without validation: a weight per pair, every candidate's r
    by a cumulative sum of pi in each feature's sorted order. (features, thresholds, alphas, losses)."""
    hi, lo, D = crucial_pairs(y, offsets)
    order, k, f, theta = reference_candidates(X, max_thresholds)
    n, loss, out = X.shape[0], 1.0, ([], [], [], [])
    for _ in range(n_rounds):
        r_all = np.cumsum(pair_pi(hi, lo, D, n)[order], axis=0)[k, f]
        best = int(np.argmax(np.abs(r_all)))
        r = float(np.clip(r_all[best], -R_CLIP, R_CLIP))
        alpha = 0.5 * np.log((1 + r) / (1 - r))
        h = (X[:, f[best]] > theta[best]).astype(np.float64)
        D = D * np.exp(alpha * (h[lo] - h[hi]))
        loss *= D.sum()
        D /= D.sum()
        for lst, v in zip(out, (int(f[best]), float(theta[best]), alpha, loss)):
            lst.append(v)
    return tuple(np.array(v) for v in out)


def tricky_data(seed=5, lengths=(6, 9, 1, 4, 2, 7, 3)):
    """Short queries (one and two documents), rounded features (many ties), a constant feature,
    a feature with few values, a query without a pair; labels 0-2."""
    rng = np.random.default_rng(seed)
    n = sum(lengths)
    X = np.round(rng.normal(size=(n, 5)), 1)
    X[:, 3] = 1.0
    X[:, 4] = rng.integers(0, 3, n)
    y = rng.integers(0, 3, n).astype(float)
    y[6:15] = 1.0  # the second query: all ties, no pair
    return X, y, np.concatenate([[0], np.cumsum(lengths)])


# --------------------------------------------------------------------------- by hand

def test_one_round_by_hand():
    # labels 2, 1, 0, 0: pairs (0,1) (0,2) (0,3) (1,2) (1,3), D = 1/5 each, so
    # pi = (3/5, 1/5, -2/5, -2/5). Feature 0 sorts the documents 0, 1, 2, 3: r = 0.6, 0.8, 0.4
    # at thresholds 3.5, 2.5, 1.5; feature 1 only separates document 2: r = -0.4.
    data = rankdata([[4, 0], [3, 0], [2, 5], [1, 0]], [2, 1, 0, 0], [4])
    model = RankBoost(n_rounds=1).fit(data)
    r = 0.8
    assert model.features_.tolist() == [0]
    assert model.thresholds_.tolist() == [2.5]
    assert model.alphas_[0] == pytest.approx(0.5 * np.log((1 + r) / (1 - r)))  # = ln 3
    # pair (0,1) keeps its weight, the four others are ordered by h: weight * e^-alpha = 1/3
    loss = pytest.approx(0.2 * (1 + 4 / 3))
    assert model.history_ == [{"step": 1, "train_exp_loss": loss, "objective": loss}]
    assert model.best_round_ == 1
    np.testing.assert_allclose(model.predict(data), np.log(3) * np.array([1, 1, 0, 0]))


def test_initial_distribution_weights_queries_equally():
    # query 0: one pair; query 1: three pairs (2 > 1 > 0); query 2: all ties, no pair
    y = np.array([1, 0, 2, 1, 0, 3, 3], dtype=float)
    offsets = np.array([0, 2, 5, 7])
    hi, lo, D = crucial_pairs(y, offsets)
    assert sorted(zip(hi.tolist(), lo.tolist())) == [(0, 1), (2, 3), (2, 4), (3, 4)]
    expected = {(0, 1): 1 / 2, (2, 3): 1 / 6, (2, 4): 1 / 6, (3, 4): 1 / 6}
    for h, l, d in zip(hi, lo, D):
        assert d == pytest.approx(expected[(h, l)])
    pi, log_loss = CrucialPairs(y, offsets).potential(np.zeros(7))
    np.testing.assert_allclose(pi, [1 / 2, -1 / 2, 2 / 6, 0, -2 / 6, 0, 0], atol=1e-15)
    assert log_loss == pytest.approx(0.0, abs=1e-15)


def test_rel_threshold_binarises_the_labels_first():
    y = np.array([2, 1, 0, 0], dtype=float)
    pi, _ = CrucialPairs((y >= 1).astype(float), np.array([0, 4])).potential(np.zeros(4))
    np.testing.assert_allclose(pi, [0.5, 0.5, -0.5, -0.5])  # 2 relevant x 2 non-relevant; 2 > 1 gone
    data = rankdata(np.arange(8.0).reshape(4, 2), y, [4])
    assert RankBoost(n_rounds=3, pairs="binary", rel_threshold=1).fit(data).best_round_ == 3


# --------------------------------------------------------------------------- pair potentials

@pytest.mark.parametrize("spread", [1.0, 1000.0])
def test_potentials_match_the_pairs(spread):
    # D(i, j) = c_q exp(s(j) - s(i)) / L, summed pair by pair in log space; a spread of 1000 puts
    # exp(s) far beyond float range, which the potentials must survive
    X, y, offsets = tricky_data()
    rng = np.random.default_rng(1)
    s = spread * rng.normal(size=len(y))
    hi, lo, D0 = crucial_pairs(y, offsets)
    log_w = np.log(D0) + s[lo] - s[hi]
    log_total = log_w.max() + np.log(np.exp(log_w - log_w.max()).sum())
    pi, mine = CrucialPairs(y, offsets).potential(s)
    assert mine == pytest.approx(log_total, rel=1e-12)
    np.testing.assert_allclose(pi, pair_pi(hi, lo, np.exp(log_w - log_total), len(y)), atol=1e-14)
    assert pi[6:15].tolist() == [0.0] * 9  # the query without a pair


# --------------------------------------------------------------------------- binned r

def brute_force_r(X, hi, lo, D, f, theta) -> float:
    return sum(d * (float(X[h, f] > theta) - float(X[l, f] > theta)) for h, l, d in zip(hi, lo, D))


@pytest.mark.parametrize("max_thresholds", [None, 4])
def test_binned_r_matches_brute_force(max_thresholds):
    X, y, offsets = tricky_data()
    n = len(y)
    X[2, 0] = np.nan  # never above a threshold, as in predict
    hi, lo, _ = crucial_pairs(y, offsets)
    rng = np.random.default_rng(5)
    D = rng.random(len(hi))
    D /= D.sum()  # a non-uniform distribution, as after some rounds
    bins = bin_features(X, max_thresholds)
    r = all_r(pair_pi(hi, lo, D, n), bins)
    for feature in range(X.shape[1]):
        values = np.unique(X[:, feature][~np.isnan(X[:, feature])])
        midpoints = (values[:-1] + values[1:]) / 2
        mine = np.sort(bins.theta[bins.feature == feature])
        if max_thresholds is None:
            np.testing.assert_allclose(mine, midpoints)
        else:
            assert len(mine) <= max_thresholds
            assert np.all(np.isclose(mine[:, None], midpoints[None, :]).any(axis=1))
    assert not np.any(bins.feature == 3)  # the constant feature has no threshold
    for j in range(len(r)):
        f, theta = bins.feature[j], bins.theta[j]
        np.testing.assert_array_equal(bins.h(j), X[:, f] > theta)
        assert r[j] == pytest.approx(brute_force_r(X, hi, lo, D, f, theta), abs=1e-12)


@pytest.mark.parametrize("max_thresholds", [None, 1, 3, 256])
def test_candidates_are_todays(max_thresholds):
    X, _, _ = tricky_data()
    X = np.concatenate([X, np.random.default_rng(2).normal(size=(len(X), 2))], axis=1)  # no ties
    X[4, 1] = np.nan
    _, _, f, theta = reference_candidates(X, max_thresholds)
    bins = bin_features(X, max_thresholds)
    np.testing.assert_array_equal(bins.feature, f)
    np.testing.assert_array_equal(bins.theta, theta)  # the same floats, in the same order


def test_adjacent_floats():
    # the midpoint of 1 + 1 ulp and 1 + 2 ulp rounds (to even) up onto the upper one: the threshold
    # becomes the lower value, which x > theta excludes, in the codes as in predict
    a = np.nextafter(1.0, 2.0)
    X = np.array([[a], [np.nextafter(a, 2.0)], [a], [0.5]])
    bins = bin_features(X, None)
    assert bins.theta[0] == a
    np.testing.assert_array_equal(bins.h(0), [0, 1, 0, 0])
    data = rankdata(X, [0, 1, 0, 0], [4])
    model = RankBoost(n_rounds=1).fit(data)
    assert model.thresholds_.tolist() == [a]
    np.testing.assert_array_equal(model.predict(data) > 0, [0, 1, 0, 0])


def test_codes_are_one_or_two_bytes():
    assert [code_dtype(m) for m in (1, 255, 256, 65535, 65536)] == [np.uint8, np.uint8, np.uint16, np.uint16, np.uint32]
    X = np.random.default_rng(0).normal(size=(600, 2))
    assert bin_features(X, 255).codes.dtype == np.uint8
    assert bin_features(X, 256).codes.dtype == np.uint16  # the default: 257 bins
    assert bin_features(X, None).codes.shape == (2, 600)


# --------------------------------------------------------------------------- against today's fit

@pytest.mark.parametrize("max_thresholds", [None, 3, 256])
@pytest.mark.parametrize("seed", [5, 6])
def test_fit_is_todays_exhaustive_search(max_thresholds, seed):
    X, y, offsets = tricky_data(seed)
    data = rankdata(X, y, np.diff(offsets))
    model = RankBoost(n_rounds=25, max_thresholds=max_thresholds).fit(data)
    features, thresholds, alphas, losses = reference_fit(X, y, offsets, 25, max_thresholds)
    np.testing.assert_array_equal(model.features_, features)
    np.testing.assert_array_equal(model.thresholds_, thresholds)
    np.testing.assert_allclose(model.alphas_, alphas, rtol=1e-12)  # sums in another order
    np.testing.assert_allclose([h["train_exp_loss"] for h in model.history_], losses, rtol=1e-12)


def test_separable_data_keeps_finite_weights():
    # one threshold orders every pair: r is clipped, alpha = 14.5 a round and the scores reach
    # 200 * 14.5 apart, where exp(s) overflows: the distribution must stay finite
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 40).astype(float)
    X = np.stack([y + 0.1 * rng.random(40), rng.random(40)], axis=1)
    model = RankBoost(n_rounds=200).fit(rankdata(X, y, [10, 10, 20]))
    assert np.all(model.features_ == 0) and np.all(model.thresholds_ == model.thresholds_[0])
    assert np.allclose(model.alphas_, 0.5 * np.log((1 + R_CLIP) / (1 - R_CLIP)))
    losses = [h["train_exp_loss"] for h in model.history_]
    assert np.all(np.isfinite(losses)) and np.all(np.diff(losses) <= 0)


# --------------------------------------------------------------------------- learning

@pytest.fixture(scope="module")
def synthetic_splits():
    parts = synthetic.make_parts(seed=0, n_queries=150)
    return RankData.concat(parts[:3]), parts[3], parts[4]


@pytest.fixture(scope="module")
def fitted(synthetic_splits):
    train, vali, _ = synthetic_splits
    start = time.perf_counter()
    model = RankBoost(n_rounds=150).fit(train, vali)
    return model, time.perf_counter() - start


def test_rankboost_learns(synthetic_splits, fitted):
    _, _, test = synthetic_splits
    model, seconds = fitted
    rng = np.random.default_rng(0)
    random = float(np.mean([mean_ndcg10(rng.normal(size=len(test.y)), test) for _ in range(20)]))
    learnt = mean_ndcg10(model.predict(test), test)
    assert learnt > random + 0.1, (f"RankBoost test NDCG@10 {learnt:.4f} vs random {random:.4f} "
                                   f"({model.best_round_} rounds, fit {seconds:.2f} s)")


def test_history_and_best_round(fitted):
    model, _ = fitted
    assert [h["step"] for h in model.history_] == list(range(1, 151))
    losses = [h["train_exp_loss"] for h in model.history_]
    assert losses[0] < 1 and np.all(np.diff(losses) <= 1e-12)
    vali = {h["step"]: h["vali_ndcg@10"] for h in model.history_ if "vali_ndcg@10" in h}
    assert list(vali) == list(range(10, 151, 10))
    assert model.best_round_ == max(vali, key=vali.get) == len(model.alphas_)


def test_without_vali_keeps_every_round(synthetic_splits):
    model = RankBoost(n_rounds=7).fit(synthetic_splits[0])
    assert model.best_round_ == 7 and all(set(h) == {"step", "train_exp_loss", "objective"} for h in model.history_)


# --------------------------------------------------------------------------- save / load, errors

def test_save_load_round_trip(fitted, synthetic_splits, tmp_path):
    model, _ = fitted
    test = synthetic_splits[2]
    model.save(tmp_path / "rankboost.json")
    loaded = load_ranker(tmp_path / "rankboost.json")
    assert isinstance(loaded, RankBoost) and loaded.get_params() == model.get_params()
    assert loaded.best_round_ == model.best_round_ and loaded.history_ == model.history_
    np.testing.assert_array_equal(loaded.predict(test), model.predict(test))


def test_predict_checks_the_feature_count(fitted, synthetic_splits):
    test = synthetic_splits[2]
    with pytest.raises(ValueError, match="expected 24 features, got 23"):
        fitted[0].predict(test.with_features(test.X[:, :23]))


@pytest.mark.parametrize("params, message", [
    ({"n_rounds": 0}, "n_rounds must be an integer >= 1"),
    ({"n_rounds": 2.5}, "n_rounds must be an integer >= 1"),
    ({"n_rounds": True}, "n_rounds must be an integer >= 1"),
    ({"max_thresholds": 0}, "max_thresholds must be an integer >= 1 or null, got 0"),
    ({"rel_threshold": float("nan")}, "rel_threshold must be a number, got nan"),
    ({"rel_threshold": "1"}, "rel_threshold must be a number, got '1'"),
    ({"pairs": "bipartite"}, "unknown pairs 'bipartite'; valid: graded, binary"),
])
def test_bad_parameters(params, message):
    with pytest.raises(ValueError, match=message):
        RankBoost(**params)


def test_training_data_without_pairs_or_thresholds():
    with pytest.raises(ValueError, match="no crucial pair"):
        RankBoost().fit(rankdata([[1.0], [2.0], [3.0]], [1, 1, 1], [3]))
    with pytest.raises(ValueError, match="no crucial pair"):
        RankBoost(pairs="binary", rel_threshold=5).fit(rankdata([[1.0], [2.0], [3.0]], [0, 1, 2], [3]))
    with pytest.raises(ValueError, match="no feature takes two different values"):
        RankBoost().fit(rankdata([[1.0], [1.0], [1.0]], [0, 1, 2], [3]))


def test_make_ranker():
    model = make_ranker("rankboost", {"n_rounds": 5, "max_thresholds": None, "seed": 3})
    assert isinstance(model, RankBoost)
    assert model.get_params() == {"n_rounds": 5, "pairs": "graded", "rel_threshold": 1.0, "max_thresholds": None,
                                  "seed": 3}
    with pytest.raises(ValueError, match="unknown parameter.*'depth'.*valid parameters: n_rounds"):
        make_ranker("rankboost", {"depth": 3})
