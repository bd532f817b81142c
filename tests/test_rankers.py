"""Rankers: the linear objective's gradient, that every ranker learns a certain linear
signal, training history, save/load round trips, determinism and config errors; the
quadratic functional, group-level training and loss_params of LinearRanker."""

from __future__ import annotations

import json

import numpy as np
import pytest

from rankstudy.data.rankdata import RankData
from rankstudy.data.blocks import pad
from rankstudy.rankers.linear import FUNCTIONALS
from rankstudy.losses.groups import GROUP_AGGREGATES
from rankstudy.losses.registry import LOSSES, get_loss
from rankstudy.features.pairs import expand
from rankstudy.rankers.registry import RANKERS, load_ranker, make_ranker
from rankstudy.rankers.lambdamart import LambdaMART
from rankstudy.rankers.base import NotFittedError
from rankstudy.scorers.linear import LinearScorer
from rankstudy.scorers.quadratic import BoundQuadratic, QuadraticScorer
from rankstudy.solvers.objective import Objective
from rankstudy.rankers.linear import LinearRanker
from rankercheck import W_TRUE, make_data, mean_ndcg_at_10

@pytest.fixture(scope="module")
def splits():
    return make_data(150, 1), make_data(40, 2), make_data(80, 3)


@pytest.fixture(scope="module")
def random_ndcg(splits):
    test = splits[2]
    rng = np.random.default_rng(0)
    return float(np.mean([mean_ndcg_at_10(rng.normal(size=len(test.y)), test) for _ in range(20)]))


@pytest.fixture(scope="module")
def lambdamart(splits):
    train, vali, _ = splits
    return LambdaMART(n_estimators=300, early_stopping_rounds=20).fit(train, vali)


@pytest.fixture(scope="module")
def linear_models(splits):
    train, vali, _ = splits
    # the default solver is the first that fits: the cutting plane for the structured hinges
    return {loss: LinearRanker(loss=loss).fit(train, vali) for loss in LOSSES}


# --------------------------------------------------------------------------- linear objective

@pytest.mark.parametrize("loss", sorted(LOSSES))
def test_linear_objective_gradient_matches_finite_differences(loss):
    data = make_data(12, 7)
    ranker = LinearRanker(loss=loss, l2=0.3)
    objective = ranker.objective(data)
    rng = np.random.default_rng(1)
    theta = 0.5 * rng.normal(size=objective.n_params)
    _, grad = objective(theta)
    h = 1e-6
    numeric = np.array([(objective(theta + h * e)[0] - objective(theta - h * e)[0]) / (2 * h)
                        for e in np.eye(len(theta))])
    assert np.linalg.norm(grad - numeric) / (np.linalg.norm(grad) + np.linalg.norm(numeric)) < 1e-5


@pytest.mark.parametrize("fit_intercept", [False, True])
def test_linear_objective_equals_loss_of_padded_scores_plus_penalty(fit_intercept):
    data = make_data(10, 8)
    rng = np.random.default_rng(2)
    objective = Objective(LinearScorer(intercept=fit_intercept).bind(data), get_loss("listnet"), data, l2=0.7)
    theta = rng.normal(size=objective.n_params)
    w = theta[: data.n_features]
    scores = data.X @ w + (theta[-1] if fit_intercept else 0.0)
    s, mask = pad(scores, data.offsets)
    y, _ = pad(data.y, data.offsets)
    expected = get_loss("listnet")(s, y, mask)[0] + 0.35 * w @ w
    assert objective(theta)[0] == pytest.approx(expected, rel=1e-12)


def test_intercept_only_for_losses_that_need_a_bias(linear_models):
    biased = {loss for loss, entry in LOSSES.items() if entry.bias}
    assert biased == {"pointwise_mse", "weighted_regression", "rmse"}
    assert all(linear_models[loss].intercept_ != 0.0 for loss in biased)
    assert all(linear_models[loss].intercept_ == 0.0 for loss in LOSSES if loss not in biased)


@pytest.mark.parametrize("params, message", [
    ({"loss": "svm_map", "solver": "lbfgs"}, "solver 'lbfgs' cannot fit loss 'svm_map'.*valid solvers: cutting_plane, "
                                             "projected_sgd"),
    ({"loss": "pointwise_mse", "solver": "cutting_plane"}, "needs bias.*valid solvers: lbfgs, projected_sgd"),
    ({"loss": "ranknet", "solver": "cutting_plane", "l2": 0.0}, "l2 = 0"),
    ({"loss": "smoothed_ndcg", "solver": "cutting_plane"}, "not convex"),
])
def test_a_solver_that_cannot_fit_the_loss_is_refused_at_construction(params, message):
    with pytest.raises(ValueError, match=message):
        LinearRanker(**params)


@pytest.mark.parametrize("solver", ["cutting_plane", "projected_sgd"])
def test_every_solver_the_check_allows_fits_a_linear_ranker(solver, splits, random_ndcg):
    """The combinations the config check lets through run and learn (they crashed at fit before)."""
    train, vali, test = splits
    model = LinearRanker(loss="ranknet", solver=solver, max_iter=50).fit(train, vali)
    assert model.objective_trace_["final"] < 0.9 * model.objective_trace_["start"]
    assert mean_ndcg_at_10(model.predict(test), test) > random_ndcg + 0.1


# --------------------------------------------------------------------------- learning

@pytest.mark.parametrize("loss", sorted(LOSSES))
def test_linear_ranker_learns_the_signal(loss, linear_models, splits, random_ndcg):
    model = linear_models[loss]
    ndcg = mean_ndcg_at_10(model.predict(splits[2]), splits[2])
    assert ndcg > random_ndcg + 0.15, (loss, ndcg, random_ndcg)
    # and the direction of the true utility is recovered (labels are monotone in it)
    cosine = model.coef_ @ W_TRUE / np.linalg.norm(model.coef_) / np.linalg.norm(W_TRUE)
    assert cosine > 0.95


def test_lambdamart_learns_the_signal(lambdamart, splits, random_ndcg):
    ndcg = mean_ndcg_at_10(lambdamart.predict(splits[2]), splits[2])
    assert ndcg > random_ndcg + 0.15, (ndcg, random_ndcg)


def test_linear_history_records_every_iteration(linear_models):
    for loss, model in linear_models.items():
        history = model.history_
        assert [h["step"] for h in history] == list(range(model.n_iter_ + 1))
        assert history[-1]["train_loss"] < history[0]["train_loss"]
        assert history[-1]["vali_loss"] < history[0]["vali_loss"]
        if model.solver_name() == "lbfgs":  # L-BFGS descends; a cutting plane's iterates need not
            objectives = [h["objective"] for h in history]
            assert all(b <= a + 1e-12 for a, b in zip(objectives, objectives[1:])), loss


def test_the_default_solver_is_chosen_where_it_is_used_and_the_parameters_keep_null():
    assert LinearRanker(loss="ranknet").get_params()["solver"] is None
    assert LinearRanker(loss="ranknet").solver_name() == "lbfgs"
    assert LinearRanker(loss="svm_map").solver_name() == "cutting_plane"  # not smooth: the first that fits
    assert LinearRanker(loss="ranknet", solver="projected_sgd").solver_name() == "projected_sgd"


def test_lambdamart_history_and_early_stopping(lambdamart):
    history = lambdamart.history_
    vali = [h["vali_ndcg@10"] for h in history]
    assert [h["step"] for h in history] == list(range(1, len(history) + 1))
    assert "train_ndcg@10" in history[0]
    # the objective curve (the step metric every ranker logs): 1 - training NDCG@10, ending where
    # the objective trace ends at the kept rounds
    assert [h["objective"] for h in history] == [1.0 - h["train_ndcg@10"] for h in history]
    assert history[lambdamart.best_iteration_ - 1]["objective"] == lambdamart.objective_trace_["final"]
    assert 1 <= lambdamart.best_iteration_ <= len(history) <= 300
    # kept rounds = the first best validation round
    assert vali[lambdamart.best_iteration_ - 1] == max(vali)
    # stopped early: exactly early_stopping_rounds past the best
    assert len(history) == lambdamart.best_iteration_ + 20 < 300
    assert lambdamart.booster_.current_iteration() == lambdamart.best_iteration_


def test_lambdamart_is_deterministic(splits):
    train, vali, test = splits
    a = LambdaMART(n_estimators=15, seed=3).fit(train, vali).predict(test)
    b = LambdaMART(n_estimators=15, seed=3).fit(train, vali).predict(test)
    np.testing.assert_array_equal(a, b)


def test_lambdamart_on_two_threads_gives_the_one_thread_model(splits):
    """Train jobs give LightGBM the job's threads; deterministic=True must make that invisible."""
    from threadpoolctl import threadpool_info

    from rankstudy.util.threads import job_threads, use_job_threads

    train, vali, test = splits
    try:
        models = {}
        for n in (1, 2):
            use_job_threads(n)
            assert job_threads() == n
            assert {i["num_threads"] for i in threadpool_info()} == {n}
            ranker = LambdaMART(n_estimators=25, seed=3)
            assert ranker.lightgbm_params()["num_threads"] == n
            models[n] = ranker.fit(train, vali)
        np.testing.assert_array_equal(models[1].predict(test), models[2].predict(test))
        trees = {n: m.booster_.model_to_string().split("\nparameters:")[0] for n, m in models.items()}
        assert trees[1] == trees[2]  # the same trees (the saved parameters differ in num_threads)
    finally:
        use_job_threads(1)


def test_float32_features_give_float64_scores_and_gradients_close_to_float64_ones(splits):
    """features.dtype float32: the linear scorer multiplies in float32 (no float64 copy of X)
    and hands float64 on; the model it trains ranks about as well."""
    train, vali, test = splits
    single = train.with_features(train.X.astype(np.float32))
    assert single.X.dtype == np.float32
    theta = np.random.default_rng(0).normal(size=train.n_features)
    exact, approx = LinearScorer().bind(train), LinearScorer().bind(single)
    (s64, vjp64), (s32, vjp32) = exact.forward(theta), approx.forward(theta)
    assert s32.dtype == np.float64 and vjp32(s32).dtype == np.float64
    np.testing.assert_allclose(s32, s64, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(vjp32(s64), vjp64(s64), rtol=1e-4)
    a = LinearRanker(loss="listnet", l2=0.01).fit(train).predict(test)
    b = LinearRanker(loss="listnet", l2=0.01).fit(single).predict(test.with_features(test.X.astype(np.float32)))
    assert abs(mean_ndcg_at_10(a, test) - mean_ndcg_at_10(b, test)) < 0.01


def test_listmle_seed_reaches_the_loss(splits):
    train = splits[0]
    a = LinearRanker(loss="listmle", seed=0, max_iter=3).fit(train)
    b = LinearRanker(loss="listmle", seed=1, max_iter=3).fit(train)
    # labels have ties, so the tie-break (hence the gradient at w = 0) differs
    assert not np.array_equal(a.coef_, b.coef_)
    c = LinearRanker(loss="listmle", seed=1, max_iter=3).fit(train)
    np.testing.assert_array_equal(b.coef_, c.coef_)


# --------------------------------------------------------------------------- persistence

def test_save_load_round_trip_gives_identical_scores(tmp_path, linear_models, lambdamart, splits):
    test = splits[2]
    for name, model in [*linear_models.items(), ("lambdamart", lambdamart)]:
        path = tmp_path / f"{name}.json"
        model.save(path)
        loaded = load_ranker(path)
        assert type(loaded) is type(model)
        assert loaded.get_params() == model.get_params()
        assert loaded.history_ == model.history_
        np.testing.assert_array_equal(loaded.predict(test), model.predict(test))
        assert load_ranker(path, expected=type(model)).get_params() == model.get_params()
    with pytest.raises(ValueError, match="lambdamart"):
        load_ranker(tmp_path / "lambdamart.json", expected=LinearRanker)


def test_get_params_are_plain_data():
    for kind, klass in RANKERS.items():
        params = klass().get_params()
        assert json.loads(json.dumps(params)) == params
        assert make_ranker(kind, params).get_params() == params


def test_predict_before_fit_raises(splits):
    for klass in RANKERS.values():
        with pytest.raises(NotFittedError):
            klass().predict(splits[2])


def test_lambdamart_rejects_non_integer_labels(splits):
    train = splits[0]
    bad = RankData(X=train.X, y=train.y + 0.5, qid=train.qid, docid=train.docid, offsets=train.offsets)
    with pytest.raises(ValueError, match="integer"):
        LambdaMART(n_estimators=2).fit(bad)


# --------------------------------------------------------------------------- config errors

def test_unknown_kind_lists_valid_kinds():
    with pytest.raises(ValueError) as err:
        make_ranker("gbrt", {})
    assert "gbrt" in str(err.value) and "linear" in str(err.value) and "lambdamart" in str(err.value)


def test_unknown_param_is_named_with_valid_ones():
    with pytest.raises(ValueError) as err:
        make_ranker("linear", {"loss": "ranknet", "alpha": 1.0})
    message = str(err.value)
    assert "alpha" in message and all(p in message for p in LinearRanker.param_names())


def test_unknown_loss_lists_valid_losses():
    with pytest.raises(ValueError) as err:
        make_ranker("linear", {"loss": "softmax_xent"})
    assert all(name in str(err.value) for name in LOSSES)


def test_load_dispatches_on_the_saved_kind(tmp_path, linear_models):
    path = tmp_path / "m.json"
    linear_models["ranknet"].save(path)
    assert isinstance(load_ranker(path), LinearRanker)


# --------------------------------------------------------------------------- quadratic functional

PAIRS = [[0, 1], [2, 2], [3, 0], [5, 7]]


def finite_difference_gradient(objective, theta, h=1e-6):
    return np.array([(objective(theta + h * e)[0] - objective(theta - h * e)[0]) / (2 * h)
                     for e in np.eye(len(theta))])


@pytest.mark.parametrize("loss", ["ranknet", "listmle", "pointwise_mse"])
def test_quadratic_objective_gradient_matches_finite_differences(loss):
    data = make_data(12, 7)
    objective = LinearRanker(loss=loss, l2=0.3, functional="quadratic", pairs=PAIRS, chunk_rows=37).objective(data)
    assert isinstance(objective.scorer, BoundQuadratic)
    assert objective.n_params == data.n_features + len(PAIRS) + (loss == "pointwise_mse")
    theta = 0.3 * np.random.default_rng(1).normal(size=objective.n_params)
    _, grad = objective(theta)
    numeric = finite_difference_gradient(objective, theta)
    assert np.linalg.norm(grad - numeric) / (np.linalg.norm(grad) + np.linalg.norm(numeric)) < 1e-6


@pytest.mark.parametrize("fit_intercept", [False, True])
def test_quadratic_objective_equals_linear_objective_on_expanded_features(fit_intercept):
    """[w, c] on x is w'' on [x, products]: same objective, same gradient, penalty on w and c."""
    data = make_data(15, 9)
    loss = get_loss("listnet")
    quadratic = Objective(QuadraticScorer(PAIRS, intercept=fit_intercept, chunk_rows=50).bind(data), loss, data, l2=0.7)
    expanded = expand(data, PAIRS)
    linear = Objective(LinearScorer(intercept=fit_intercept).bind(expanded), loss, expanded, l2=0.7)
    theta = np.random.default_rng(3).normal(size=linear.n_params)
    (value_q, grad_q), (value_l, grad_l) = quadratic(theta), linear(theta)
    assert value_q == pytest.approx(value_l, rel=1e-12)
    np.testing.assert_allclose(grad_q, grad_l, rtol=1e-10, atol=1e-12)


def make_product_data(n_queries: int, seed: int) -> RankData:
    """Labels 0-2 driven by the interaction x_0 * x_1 (plus a weak linear term): no linear
    function of x can order them, the quadratic functional with pair (0, 1) can."""
    rng = np.random.default_rng(seed)
    lengths = rng.integers(10, 30, n_queries)
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    n = int(offsets[-1])
    X = rng.normal(size=(n, 5))
    utility = 2.0 * X[:, 0] * X[:, 1] + 0.3 * X[:, 2] + 0.3 * rng.normal(size=n)
    y = np.digitize(utility, [0.8, 2.0]).astype(float)
    return RankData(X=X, y=y, qid=np.repeat(np.arange(n_queries), lengths),
                    docid=np.arange(n).astype(str), offsets=offsets)


def test_quadratic_ranker_learns_a_feature_interaction():
    train, test = make_product_data(120, 11), make_product_data(60, 12)
    all_pairs = np.column_stack(np.triu_indices(5)).tolist()
    linear = LinearRanker(loss="ranknet").fit(train)
    quadratic = LinearRanker(loss="ranknet", functional="quadratic", pairs=all_pairs).fit(train)
    ndcg_linear = mean_ndcg_at_10(linear.predict(test), test)
    ndcg_quadratic = mean_ndcg_at_10(quadratic.predict(test), test)
    assert ndcg_quadratic > ndcg_linear + 0.2, (ndcg_quadratic, ndcg_linear)
    # the interaction's coefficient dominates the learned quadratic part
    assert all_pairs.index([0, 1]) == int(np.argmax(np.abs(quadratic.pair_coef_)))


# --------------------------------------------------------------------------- group-level training

@pytest.mark.parametrize("agg", GROUP_AGGREGATES)
def test_grouped_training_learns_the_signal(agg, splits, random_ndcg):
    train, vali, test = splits
    model = LinearRanker(loss="listmle", group=agg).fit(train, vali)
    ndcg = mean_ndcg_at_10(model.predict(test), test)
    assert ndcg > random_ndcg + 0.15, (agg, ndcg, random_ndcg)
    assert model.history_[-1]["vali_loss"] < model.history_[0]["vali_loss"]


def test_group_changes_the_objective(splits):
    train = splits[0]
    theta = np.linspace(-1, 1, train.n_features)
    plain = LinearRanker(loss="listmle").objective(train)(theta)[0]
    grouped = LinearRanker(loss="listmle", group="mean").objective(train)(theta)[0]
    assert grouped < plain  # fewer, tie-free items per query: a much smaller PL likelihood


# --------------------------------------------------------------------------- loss_params

def test_loss_params_reach_the_loss(splits):
    train = splits[0]
    via_params = LinearRanker(loss="listmle", loss_params={"seed": 1}, max_iter=3).fit(train)
    via_seed = LinearRanker(loss="listmle", seed=1, max_iter=3).fit(train)
    default = LinearRanker(loss="listmle", max_iter=3).fit(train)
    np.testing.assert_array_equal(via_params.coef_, via_seed.coef_)
    assert not np.array_equal(via_params.coef_, default.coef_)
    # loss_params override the ranker's seed
    overridden = LinearRanker(loss="listmle", seed=0, loss_params={"seed": 1}, max_iter=3).fit(train)
    np.testing.assert_array_equal(overridden.coef_, via_seed.coef_)


def test_loss_params_block_size_keeps_ranknet_results(splits):
    train = splits[0]
    small_blocks = LinearRanker(loss="ranknet", loss_params={"block_elements": 64}, max_iter=5).fit(train)
    default = LinearRanker(loss="ranknet", max_iter=5).fit(train)
    np.testing.assert_allclose(small_blocks.coef_, default.coef_, rtol=1e-8)


def test_unknown_loss_params_are_named_with_valid_ones():
    with pytest.raises(ValueError) as err:
        LinearRanker(loss="ranknet", loss_params={"blok_elements": 8})
    assert "blok_elements" in str(err.value) and "block_elements" in str(err.value)
    with pytest.raises(ValueError, match="seed"):
        LinearRanker(loss="listnet", loss_params={"seed": 1})


# --------------------------------------------------------------------------- persistence and config

@pytest.mark.parametrize("params", [
    {"loss": "ranknet", "functional": "quadratic", "pairs": PAIRS, "chunk_rows": 100},
    {"loss": "pointwise_mse", "functional": "quadratic", "pairs": PAIRS},
    {"loss": "listmle", "group": "geomean", "loss_params": {"seed": 2}},
], ids=["quadratic", "quadratic-intercept", "grouped"])
def test_extended_linear_round_trip(tmp_path, splits, params):
    train, _, test = splits
    model = make_ranker("linear", params).fit(train)
    model.save(tmp_path / "m.json")
    loaded = load_ranker(tmp_path / "m.json")
    assert loaded.get_params() == model.get_params()
    assert json.loads(json.dumps(model.get_params())) == model.get_params()
    np.testing.assert_array_equal(loaded.predict(test), model.predict(test))
    if params.get("functional") == "quadratic":
        assert len(loaded.pair_coef_) == len(PAIRS) and np.any(loaded.pair_coef_ != 0)
        np.testing.assert_array_equal(loaded.pair_coef_, model.pair_coef_)


def test_model_saved_before_the_new_parameters_still_loads(tmp_path, splits):
    """The version-1 file format as written before loss_params/group/functional existed."""
    doc = {"format": "rankstudy.ranker", "version": 1, "kind": "linear",
           "params": {"loss": "ranknet", "l2": 0.001, "max_iter": 200, "tol": 1e-06, "seed": 0},
           "state": {"coef": W_TRUE.tolist(), "intercept": 0.0, "n_iter": 7, "n_fev": 9, "converged": True},
           "history": [{"step": 0, "objective": 1.0, "train_loss": 1.0}]}
    (tmp_path / "old.json").write_text(json.dumps(doc))
    model = load_ranker(tmp_path / "old.json")
    assert model.functional == "linear" and model.group is None and model.pairs is None
    np.testing.assert_array_equal(model.predict(splits[2]), splits[2].X @ W_TRUE)


def test_extended_config_errors():
    with pytest.raises(ValueError) as err:
        make_ranker("linear", {"functional": "cubic"})
    assert "cubic" in str(err.value) and all(f in str(err.value) for f in FUNCTIONALS)
    with pytest.raises(ValueError) as err:
        make_ranker("linear", {"group": "median"})
    assert "median" in str(err.value) and all(a in str(err.value) for a in GROUP_AGGREGATES)
    with pytest.raises(ValueError, match="pairs"):
        make_ranker("linear", {"functional": "quadratic"})
    with pytest.raises(ValueError, match="pairs"):
        make_ranker("linear", {"pairs": PAIRS})
    with pytest.raises(ValueError, match="out of range"):
        make_ranker("linear", {"functional": "quadratic", "pairs": [[0, 99]]}).fit(make_data(5, 1))


# --------------------------------------------------------------------------- McRank

def test_mcrank_learns_and_scores_expected_relevance(splits, random_ndcg, tmp_path):
    from rankstudy.rankers.mcrank import McRank

    train, vali, test = splits
    model = McRank(n_estimators=60).fit(train, vali)
    scores = model.predict(test)
    assert mean_ndcg_at_10(scores, test) > random_ndcg + 0.15
    proba = model.booster_.predict(test.X)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    np.testing.assert_allclose(scores, proba @ np.arange(proba.shape[1]))  # expected grade
    assert 0 <= scores.min() and scores.max() <= train.y.max()
    assert "vali_multi_logloss" in model.history_[0]
    model.save(tmp_path / "m.json")
    np.testing.assert_array_equal(load_ranker(tmp_path / "m.json").predict(test), scores)


def test_lbfgs_evaluates_the_start_point_once():
    # the history's step 0 and SciPy's first call share one evaluation of theta0; every call
    # then is one SciPy counts (n_fev), and the result is that of a plain SciPy run
    from scipy.optimize import minimize

    from rankstudy.solvers.lbfgs import LBFGS

    data = make_data(30, 5)
    objective = LinearRanker(loss="listnet").objective(data)
    calls = []

    def counted(theta, need_grad=True):
        calls.append(np.array(theta))
        return objective(theta, need_grad)

    counted.data_loss = objective.data_loss
    theta0 = np.zeros(objective.n_params)
    solution = LBFGS(max_iter=5, tol=0.0).solve(counted, theta0)
    assert len(calls) == solution.n_fev
    assert sum(np.array_equal(theta, theta0) for theta in calls) == 1
    plain = minimize(objective, theta0, jac=True, method="L-BFGS-B", tol=0.0, options={"maxiter": 5})
    np.testing.assert_array_equal(solution.theta, plain.x)
    assert solution.history[0]["objective"] == objective(theta0, need_grad=False)[0]
