"""The XGBoost and CatBoost rankers (the gbdt extra): each objective gives the model a direct call
of its library gives on the same data, they learn, save/load, the same model on 1 and 2 threads,
bad parameters and a missing library are named; and each learns on real OHSUMED (slow)."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from losscheck import mean_metric, random_ndcg
from rankercheck import make_data, mean_ndcg_at_10
from rankstudy.rankers.registry import load_ranker, make_ranker
from rankstudy.util.threads import use_job_threads

XGBOOST_OBJECTIVES = ["rank:ndcg", "rank:pairwise", "rank:map"]
CATBOOST_LOSSES = ["YetiRank", "YetiRankPairwise", "QuerySoftMax", "PairLogit", "LambdaMart"]


@pytest.fixture(scope="module")
def splits():
    return make_data(40, 0), make_data(20, 1), make_data(20, 2)


@pytest.fixture(scope="module")
def xgb():
    return pytest.importorskip("xgboost")


@pytest.fixture(scope="module")
def cb():
    return pytest.importorskip("catboost")


def library_ndcg(scores: np.ndarray, data) -> float:
    """Mean NDCG@10 as XGBoost and CatBoost report it: a query without a relevant document counts 1
    (the reference skips them)."""
    relevant = np.maximum.reduceat(data.y, data.offsets[:-1]) > 0
    return (mean_ndcg_at_10(scores, data) * relevant.sum() + (~relevant).sum()) / len(relevant)


# -- the libraries' own defaults, as the rankers declare them (Param.library) ------------------------


def declared_library_defaults(kind: str) -> dict[str, float]:
    """The numeric library defaults a ranker kind declares (its Params' ``library``)."""
    from rankstudy.rankers.registry import RANKERS

    found = {}
    for name, param in RANKERS[kind].parameters.items():
        try:
            found[name] = float(param.library.split(",")[0])
        except ValueError:
            continue
    return found


def test_the_declared_library_defaults_are_lightgbms_and_xgboosts_own(xgb, splits):
    """What `rankstudy list methods` says each library would use is what it uses when not told."""
    import json
    import re

    import lightgbm

    train = splits[0]
    booster = lightgbm.train({"objective": "lambdarank", "verbosity": -1},
                             lightgbm.Dataset(train.X, label=train.y.astype(int), group=train.query_lengths))
    text = booster.model_to_string()
    used = dict(re.findall(r"\[(\w+): ([^\]]*)\]", text[text.index("parameters:"):text.index("end of parameters")]))
    lightgbm_names = {"n_estimators": "num_iterations", "learning_rate": "learning_rate", "num_leaves": "num_leaves",
                      "min_data_in_leaf": "min_data_in_leaf", "lambda_l2": "lambda_l2",
                      "bagging_fraction": "bagging_fraction", "feature_fraction": "feature_fraction"}
    for kind in ("lambdamart", "mart", "mcrank", "random_forest"):
        for name, value in declared_library_defaults(kind).items():
            assert float(used[lightgbm_names[name]]) == value, (kind, name)
    assert booster.current_iteration() == declared_library_defaults("lambdamart")["n_estimators"]
    assert used["early_stopping_round"] == "0"  # LightGBM's "none"

    matrix = xgb.DMatrix(train.X, label=train.y, group=train.query_lengths)
    model = xgb.train({"objective": "rank:ndcg"}, matrix)
    config = json.loads(model.save_config())["learner"]["gradient_booster"]["tree_train_param"]
    xgboost_names = {"learning_rate": "eta", "max_depth": "max_depth", "max_leaves": "max_leaves",
                     "min_child_weight": "min_child_weight", "reg_lambda": "lambda", "subsample": "subsample",
                     "colsample_bytree": "colsample_bytree"}
    declared = declared_library_defaults("xgboost")
    assert model.num_boosted_rounds() == declared.pop("n_estimators")
    for name, value in declared.items():
        assert float(config[xgboost_names[name]]) == pytest.approx(value), name


@pytest.mark.parametrize("loss, l2", [("YetiRank", 0.0), ("YetiRankPairwise", 0.0), ("LambdaMart", 0.0),
                                      ("QuerySoftMax", 3.0), ("PairLogit", 3.0)])
def test_catboosts_own_l2_leaf_reg_is_not_3_for_yetirank(loss, l2, cb, splits):
    """rankstudy passes l2_leaf_reg 3 for every loss; CatBoost's own is 3 only for some (its docs
    say 3.0; for YetiRank, YetiRankPairwise and LambdaMart it sets 0, kept as 1e-20), as the
    parameter's declaration says."""
    from rankstudy.rankers.registry import RANKERS

    train = splits[0]
    model = cb.CatBoost({"loss_function": loss, "iterations": 2, "verbose": False, "allow_writing_files": False,
                         "thread_count": 1})
    model.fit(cb.Pool(train.X, label=train.y, group_id=train.qid))
    assert model.get_all_params()["l2_leaf_reg"] == pytest.approx(l2, abs=1e-12)
    said = RANKERS["catboost"].parameters["l2_leaf_reg"].library
    assert said.startswith("3,") and (loss in said) == (l2 == 0.0)
    assert RANKERS["catboost"].parameters["l2_leaf_reg"].default == 3.0


# -- (a) each objective is its library's ---------------------------------------------------------

@pytest.mark.parametrize("objective", XGBOOST_OBJECTIVES)
def test_xgboost_ranker_is_a_direct_xgboost_train(objective, xgb, splits):
    """Non-default values everywhere, so a parameter passed under the wrong name shows."""
    train, vali, test = splits
    ours = make_ranker("xgboost", {
        "objective": objective, "n_estimators": 80, "learning_rate": 0.2, "max_depth": 4, "max_leaves": 12,
        "min_child_weight": 0.5, "reg_lambda": 2.0, "subsample": 0.8, "colsample_bytree": 0.7,
        "early_stopping_rounds": 8, "seed": 3}).fit(train, vali)

    labels = (train.y >= 1) if objective == "rank:map" else train.y  # rank:map takes binary labels only
    dtrain = xgb.DMatrix(train.X, label=labels, group=train.query_lengths)
    dvali = xgb.DMatrix(vali.X, label=vali.y, group=vali.query_lengths)
    params = {"objective": objective, "eval_metric": "ndcg@10", "tree_method": "hist", "eta": 0.2, "max_depth": 4,
              "max_leaves": 12, "min_child_weight": 0.5, "lambda": 2.0, "subsample": 0.8, "colsample_bytree": 0.7,
              "seed": 3, "nthread": 1}
    booster = xgb.train(params, dtrain, 80, evals=[(dvali, "vali")], early_stopping_rounds=8, verbose_eval=False)
    direct = booster.predict(xgb.DMatrix(test.X), iteration_range=(0, booster.best_iteration + 1))

    assert 1 < ours.best_iteration_ == booster.best_iteration + 1 < 80
    np.testing.assert_array_equal(ours.predict(test), direct.astype(np.float64))


@pytest.mark.parametrize("loss", CATBOOST_LOSSES)
def test_catboost_ranker_is_a_direct_catboost_fit(loss, cb, splits):
    train, vali, test = splits
    ours = make_ranker("catboost", {
        "loss": loss, "iterations": 60, "learning_rate": 0.15, "depth": 4, "l2_leaf_reg": 2.0,
        "random_strength": 0.5, "early_stopping_rounds": 10, "seed": 3}).fit(train, vali)

    model = cb.CatBoost({"loss_function": loss, "iterations": 60, "learning_rate": 0.15, "depth": 4,
                         "l2_leaf_reg": 2.0, "random_strength": 0.5, "random_seed": 3,
                         "eval_metric": "NDCG:top=10;type=Exp", "od_type": "Iter", "od_wait": 10,
                         "use_best_model": True, "thread_count": 1, "allow_writing_files": False, "verbose": False})
    model.fit(cb.Pool(train.X, label=train.y, group_id=train.qid),
              eval_set=cb.Pool(vali.X, label=vali.y, group_id=vali.qid))

    assert ours.best_iteration_ == model.tree_count_ == model.get_best_iteration() + 1
    np.testing.assert_array_equal(ours.predict(test), model.predict(test.X))


# -- (b) they learn; the history and the objective ---------------------------------------------

@pytest.fixture(scope="module")
def xgboost_model(xgb, splits):
    return make_ranker("xgboost", {"n_estimators": 150, "learning_rate": 0.1}).fit(*splits[:2])


@pytest.fixture(scope="module")
def catboost_model(cb, splits):
    return make_ranker("catboost", {"iterations": 150, "learning_rate": 0.1}).fit(*splits[:2])


@pytest.mark.parametrize("name", ["xgboost_model", "catboost_model"])
def test_learns_and_the_objective_is_one_minus_the_training_ndcg(name, request, splits):
    model = request.getfixturevalue(name)
    train, vali, test = splits
    history, kept = model.history_, model.best_iteration_
    # the objective curve is 1 - the library's training NDCG@10 of every round
    assert [h["objective"] for h in history] == [1 - h["train_ndcg@10"] for h in history]
    assert model.objective_trace_["final"] == history[kept - 1]["objective"]
    # early stopping kept the best validation round and trained the patience beyond it
    vali_curve = [h["vali_ndcg@10"] for h in history]
    assert vali_curve[kept - 1] == max(vali_curve) and kept < len(history)
    # the library's NDCG@10 of the kept model on the training split, ours within rounding
    assert history[kept - 1]["train_ndcg@10"] == pytest.approx(library_ndcg(model.predict(train), train), abs=1e-6)
    assert model.objective_trace_["final"] < 0.5 * model.objective_trace_["start"]
    assert mean_ndcg_at_10(model.predict(test), test) > random_ndcg(test) + 0.3


def test_xgboost_objective_starts_at_the_ndcg_of_equal_scores(xgboost_model, splits):
    """Equal scores: XGBoost keeps the input order, as our metric does on ties."""
    train = splits[0]
    start = 1 - library_ndcg(np.zeros(len(train.y)), train)
    assert xgboost_model.objective_trace_["start"] == pytest.approx(start, abs=1e-6)


def test_catboost_objective_starts_at_its_ndcg_of_equal_scores_the_worst_order(catboost_model, splits):
    train = splits[0]
    worst = 1 - library_ndcg(-train.y, train)  # ties ranked worst first
    assert catboost_model.objective_trace_["start"] == pytest.approx(worst, abs=1e-6)


def test_without_a_validation_split_every_round_is_kept(xgb, cb, splits):
    train = splits[0]
    xgboost = make_ranker("xgboost", {"n_estimators": 12}).fit(train)
    catboost = make_ranker("catboost", {"iterations": 12}).fit(train)
    for model in (xgboost, catboost):
        assert model.best_iteration_ == len(model.history_) == 12
        assert not any(key.startswith("vali_") for key in model.history_[0])


def test_rank_map_trains_on_binary_labels_and_stops_on_graded_ones(xgb, splits):
    train, vali, _ = splits
    model = make_ranker("xgboost", {"objective": "rank:map", "n_estimators": 30}).fit(train, vali)
    binary = type(train)(X=train.X, y=(train.y >= 1).astype(float), qid=train.qid, docid=train.docid,
                         offsets=train.offsets)
    kept = model.history_[model.best_iteration_ - 1]
    assert kept["train_ndcg@10"] == pytest.approx(library_ndcg(model.predict(train), binary), abs=1e-6)
    assert kept["vali_ndcg@10"] == pytest.approx(library_ndcg(model.predict(vali), vali), abs=1e-6)


# -- (c) save and load ----------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["xgboost_model", "catboost_model"])
def test_save_load_round_trip_gives_identical_scores(name, request, splits, tmp_path):
    model = request.getfixturevalue(name)
    model.save(tmp_path / "m.json")
    loaded = load_ranker(tmp_path / "m.json")
    assert type(loaded) is type(model) and loaded.get_params() == model.get_params()
    assert loaded.best_iteration_ == model.best_iteration_ and loaded.objective_trace_ == model.objective_trace_
    np.testing.assert_array_equal(loaded.predict(splits[2]), model.predict(splits[2]))
    with pytest.raises(ValueError, match="expected 8 features, got 3"):
        loaded.predict(type(splits[2])(X=splits[2].X[:, :3], y=splits[2].y, qid=splits[2].qid,
                                       docid=splits[2].docid, offsets=splits[2].offsets))


# -- (d) threads --------------------------------------------------------------------------------

@pytest.mark.parametrize("kind, params", [
    ("xgboost", {"n_estimators": 30, "subsample": 0.8, "colsample_bytree": 0.8}),
    ("catboost", {"iterations": 30}),
])
def test_two_threads_give_the_one_thread_model(kind, params, request):
    """Enough documents (about 4,500) that both libraries split their work between the threads."""
    request.getfixturevalue("xgb" if kind == "xgboost" else "cb")
    train, vali, test = make_data(200, 5), make_data(40, 6), make_data(40, 7)
    try:
        scores = {}
        for n in (1, 2):
            use_job_threads(n)
            ranker = make_ranker(kind, params)
            assert (ranker.xgboost_params()["nthread"] if kind == "xgboost"
                    else ranker.catboost_params()["thread_count"]) == n
            scores[n] = ranker.fit(train, vali).predict(test)
        np.testing.assert_array_equal(scores[1], scores[2])
    finally:
        use_job_threads(1)


# -- (e) bad parameters, a missing library ----------------------------------------------------

@pytest.mark.parametrize("kind, params, message", [
    ("xgboost", {"objective": "rank:ndcg@5"}, r"xgboost: unknown objective 'rank:ndcg@5'; valid: rank:ndcg, rank:pairwise, rank:map"),
    ("xgboost", {"learning_rate": 0}, r"xgboost: learning_rate must be a number > 0, got 0"),
    ("xgboost", {"max_depth": -1}, r"xgboost: max_depth must be an integer >= 0, got -1"),
    ("xgboost", {"subsample": 1.5}, r"xgboost: subsample must be a number > 0 and <= 1, got 1.5"),
    ("xgboost", {"lambda": 1.0}, r"unknown parameter.*'lambda'.*xgboost.*reg_lambda"),
    ("catboost", {"loss": "YetiRankPairWise"}, r"catboost: unknown loss 'YetiRankPairWise'; valid: YetiRank, YetiRankPairwise"),
    ("catboost", {"depth": 17}, r"catboost: depth must be an integer >= 1 and <= 16, got 17"),
    ("catboost", {"l2_leaf_reg": -1}, r"catboost: l2_leaf_reg must be a number >= 0, got -1"),
    ("catboost", {"seed": -1}, r"catboost: seed must be an integer >= 0, got -1"),
])
def test_bad_parameters_are_refused_naming_them(kind, params, message):
    with pytest.raises(ValueError, match=message):
        make_ranker(kind, params)


def test_non_integer_labels_are_refused_by_xgboost(xgb, splits):
    train = splits[0]
    bad = type(train)(X=train.X, y=train.y + 0.5, qid=train.qid, docid=train.docid, offsets=train.offsets)
    with pytest.raises(ValueError, match="xgboost needs non-negative integer relevance labels"):
        make_ranker("xgboost", {"n_estimators": 2}).fit(bad)


@pytest.mark.parametrize("kind, module", [("xgboost", "xgboost"), ("catboost", "catboost")])
def test_a_missing_library_names_the_gbdt_extra(kind, module, monkeypatch, splits, tmp_path):
    ranker = make_ranker(kind)  # building one imports nothing
    monkeypatch.setitem(sys.modules, module, None)  # what a failed import looks like to importlib
    with pytest.raises(ImportError, match=rf"ranker kind '{kind}' needs {module}.*pip install 'rankstudy\[gbdt\]'"):
        ranker.fit(*splits[:2])
    (tmp_path / "m.json").write_text(
        f'{{"format": "rankstudy.ranker", "version": 1, "kind": "{kind}", "params": {{}}, '
        f'"state": {{}}, "history": []}}')
    with pytest.raises(ImportError, match=r"pip install 'rankstudy\[gbdt\]'"):
        load_ranker(tmp_path / "m.json")


# -- (f) real data ------------------------------------------------------------------------------

@pytest.mark.slow
@pytest.mark.parametrize("kind, params", [
    ("xgboost", {}), ("xgboost", {"objective": "rank:pairwise"}),
    ("catboost", {}), ("catboost", {"loss": "QuerySoftMax"}),
])
def test_learns_on_real_ohsumed(kind, params, ohsumed_fold, request):
    """Fold 1, QueryLevelNorm, graded labels, the kind's defaults: test NDCG@10 clearly above
    random, the training objective well below its start."""
    request.getfixturevalue("xgb" if kind == "xgboost" else "cb")
    splits = ohsumed_fold(1)
    train, vali, test = splits["train"], splits["vali"], splits["test"]
    model = make_ranker(kind, params).fit(train, vali)
    ndcg, random = mean_metric(model.predict(test), test), random_ndcg(test)
    print(f"\n{kind} {params} OHSUMED fold 1: test NDCG@10 {ndcg:.4f} (random {random:.4f}); "
          f"rounds kept {model.best_iteration_}; objective {model.objective_trace_}")
    assert ndcg > random + 0.1
    assert model.objective_trace_["final"] < 0.8 * model.objective_trace_["start"]
