"""StructRank: the Nadaraya-Watson scorer against a naive loop (leave-one-out on the training
documents) and its vector-Jacobian product against finite differences, the objective's
gradient in (bandwidths, CDN weights), the projected SGD's constraints after every update and
its projection, learning with both ranking functions; every StructRank variant of the
huang-frey2008-fig4 study learns on OHSUMED-shaped data (long queries, a third relevant, ties)
and on real OHSUMED (fold 1), where the paper's literal recipe stalls on the L1 boundary or
blows up; training is robust (seed to seed) when a query's preferences fail together, and the
full CDN discounts such a query."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import yaml

from losscheck import linear_signal_data, ohsumed_shaped
from rankstudy.data.blocks import pad
from rankstudy.data.rankdata import RankData
from rankstudy.evaluation.metrics import per_query
from rankstudy.losses.cdn import CDNLoss, cdn_with_weights, order_edges
from rankstudy.rankers.linear import LinearRanker
from rankstudy.rankers.registry import load_ranker
from rankstudy.rankers.structrank import StructRank
from rankstudy.scorers.kernel import NadarayaWatsonScorer
from rankstudy.solvers.objective import Objective
from rankstudy.solvers.projected_sgd import project_l1

ROOT = Path(__file__).resolve().parents[1]
FIG4 = yaml.safe_load((ROOT / "config/studies/huang-frey2008-fig4.yaml").read_text())
# the study's StructRank methods; the *-paper ones are the literal recipe, shown beside them, which
# is not expected to learn (test_the_papers_recipe_stalls_on_the_l1_boundary pins why)
VARIANTS = [name for name in FIG4["run_methods"]
            if FIG4["methods"][name]["kind"] == "structrank" and not name.endswith("-paper")]
LITERAL = {"reduction": "sum", "feasibility": "halve", "step_rule": "plain"}  # the paper's Section 5


def small(seed=0, n_queries=6):
    data = linear_signal_data(seed, n_queries=n_queries, n_features=4)
    return data


def naive_nw(x, RX, Ry, a, exclude=None):
    k = np.exp(-0.5 * (((x - RX) * a) ** 2).sum(axis=1))
    if exclude is not None:
        k[exclude] = 0.0
    return (k * Ry).sum() / k.sum()


def test_kernel_scores_match_a_loop_with_leave_one_out():
    train, test = small(0), small(1)
    a = np.array([0.7, 1.3, 0.2, 2.0])
    scorer = NadarayaWatsonScorer(train.X, train.y, chunk_rows=7)
    ours_train = scorer.bind(train).scores(a)
    ours_test = scorer.bind(test).scores(a)
    np.testing.assert_allclose(ours_train, [naive_nw(x, train.X, train.y, a, i) for i, x in enumerate(train.X)],
                               rtol=1e-10)
    np.testing.assert_allclose(ours_test, [naive_nw(x, train.X, train.y, a) for x in test.X], rtol=1e-10)


@pytest.mark.parametrize("reduction", ["sum", "mean"])
def test_objective_gradient_in_bandwidths_and_cdn_weights(reduction):
    train = small(2, 4)
    for topology in ("full", "random", "disconnected"):
        objective = Objective(NadarayaWatsonScorer(train.X, train.y, chunk_rows=11).bind(train),
                              CDNLoss(topology, degree=2, reduction=reduction), train, l2=0.0)
        theta = np.array([0.6, 1.1, 0.4, 0.9, 0.8, 1.2])
        value, grad = objective(theta)
        h = 1e-6
        numeric = np.array([(objective(theta + h * e)[0] - objective(theta - h * e)[0]) / (2 * h)
                            for e in np.eye(len(theta))])
        np.testing.assert_allclose(grad, numeric, rtol=1e-5, atol=1e-8, err_msg=topology)
        if topology == "disconnected":
            assert grad[-1] == 0.0  # w2 is not used without a second edge


@pytest.mark.parametrize("ranking_function", ["nadaraya_watson", "linear"])
def test_structrank_learns_and_keeps_its_constraints(ranking_function):
    train, vali, test = linear_signal_data(0, 30), linear_signal_data(1, 15), linear_signal_data(2, 30)
    model = StructRank(topology="random", degree=2, ranking_function=ranking_function, epochs=4, restarts=2,
                       l1_bound=20.0).fit(train, vali)
    rng = np.random.default_rng(0)
    random = np.mean([per_query(rng.random(len(test.y)), test.y, test.offsets, ["ndcg@10"])["ndcg@10"].mean()
                      for _ in range(10)])
    ours = per_query(model.predict(test), test.y, test.offsets, ["ndcg@10"])["ndcg@10"].mean()
    assert ours > random + 0.15, (ours, random)
    for restart in range(2):
        lows = [h[f"restart{restart}_min_constrained"] for h in model.history_]
        widest = [h[f"restart{restart}_max_l1"] for h in model.history_]
        assert min(lows) >= 0.0 and max(widest) <= 20.0 * (1 + 1e-9)
    assert (model.cdn_weights_ >= 0).all() and model.chosen_restart_ in (0, 1)


def test_save_load_round_trip(tmp_path):
    train = small(3, 8)
    model = StructRank(topology="full", epochs=2, restarts=1).fit(train)
    model.save(tmp_path / "m.json")
    back = load_ranker(tmp_path / "m.json")
    np.testing.assert_array_equal(back.predict(small(4)), model.predict(small(4)))
    assert json.loads((tmp_path / "m.json").read_text())["state"]["loss_params"] == model.parts_["loss_params"]


def test_checks():
    with pytest.raises(ValueError, match="topology"):
        StructRank(topology="star")
    with pytest.raises(ValueError, match="ranking_function"):
        StructRank(ranking_function="tree")
    with pytest.raises(ValueError, match="l1_bound"):
        StructRank(l1_bound=-1.0)
    with pytest.raises(ValueError, match="feasibility"):
        StructRank(feasibility="clip")
    with pytest.raises(ValueError, match="step_rule"):
        StructRank(step_rule="adam")
    with pytest.raises(ValueError, match="reduction"):
        StructRank(reduction="max")


def test_projection_is_the_nearest_feasible_point():
    """Against the KKT conditions and random feasible points: the projection is feasible, on the
    boundary when the point was outside, and no feasible point is nearer."""
    rng = np.random.default_rng(0)
    for trial in range(50):
        v = rng.normal(size=8) * rng.choice([0.3, 3.0])
        nonnegative = rng.random(8) < 0.5
        bound = float(rng.uniform(0.5, 5.0))
        p = project_l1(v, nonnegative, bound)
        assert np.all(p[nonnegative] >= 0) and np.abs(p).sum() <= bound * (1 + 1e-12)
        inside = np.where(nonnegative, np.maximum(v, 0), v)
        if np.abs(inside).sum() > bound:
            assert np.abs(p).sum() == pytest.approx(bound, rel=1e-12)
        else:
            np.testing.assert_array_equal(p, inside)
        for _ in range(200):
            z = rng.normal(size=8)
            z[nonnegative] = np.abs(z[nonnegative])
            z *= rng.uniform(0, bound) / np.abs(z).sum()
            assert np.linalg.norm(v - p) <= np.linalg.norm(v - z) + 1e-12


# --------------------------------------------------------------------------- bounded memory

def tied_split(seed=0):
    """Queries of 1, 2, 3, 7, 12 and 30 documents (padding in the (Q, L) arrays, queries with no
    edge or one), features on a grid of quarters with whole documents repeated (ties in the
    distances, a document's twin left in when it is left out), labels 0-2 with ties."""
    rng = np.random.default_rng(seed)
    lengths = np.array([7, 1, 30, 2, 12, 3])
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    n = int(offsets[-1])
    X = np.round(4 * rng.random((n, 5))) / 4
    X[40:45] = X[3:8]  # the same documents in two queries
    y = rng.integers(0, 3, n).astype(float)
    return RankData(X=X, y=y, qid=np.repeat(np.arange(len(lengths)), lengths), docid=np.arange(n).astype(str),
                    offsets=offsets)


def objective_value_and_grad(data, theta, query=None):
    """The StructRank objective (Nadaraya-Watson scorer, full CDN) on the split or one query."""
    objective = Objective(NadarayaWatsonScorer(data.X, data.y).bind(data), CDNLoss("full", reduction="mean"),
                          data, l2=0.0)
    return (objective if query is None else objective.for_queries([query]))(theta)


@pytest.mark.parametrize("query", [None, 0, 1, 2, 4])
def test_kernel_chunks_of_one_row_match_one_chunk(monkeypatch, query):
    """The bounded path (chunks of one row, weights recomputed in the vjp) against one chunk with
    its weights kept, on the whole split and on single queries (as SGD takes them): the same
    objective and gradient up to rounding (a chunk's matrix products round by its shape, the vjp
    sums over chunks), with ties, padding and queries of one and two documents."""
    import rankstudy.scorers.kernel as kernel

    data = tied_split()
    theta = np.array([0.9, 1.4, 0.3, 2.0, 0.7, 0.8, 1.3])
    monkeypatch.setattr(kernel, "KERNEL_BLOCK_ELEMENTS", 1 << 30)
    monkeypatch.setattr(kernel, "KEPT_ELEMENTS", 1 << 30)
    one_value, one_grad = objective_value_and_grad(data, theta, query)
    monkeypatch.setattr(kernel, "KERNEL_BLOCK_ELEMENTS", 1)
    monkeypatch.setattr(kernel, "KEPT_ELEMENTS", 0)
    bound = NadarayaWatsonScorer(data.X, data.y).bind(data)
    assert [c.stop - c.start for c in bound.chunks()] == [1] * len(data.y)
    value, grad = objective_value_and_grad(data, theta, query)
    assert value == pytest.approx(one_value, rel=1e-13)
    np.testing.assert_allclose(grad, one_grad, rtol=1e-12, atol=1e-15 * np.abs(one_grad).max())
    if query == 1:  # a query of one document has no edge: no loss, no gradient
        assert value == 0.0 and not grad.any()


def test_kernel_chunk_bounded_by_reference_size(monkeypatch):
    """A chunk holds at most chunk_rows rows and KERNEL_BLOCK_ELEMENTS weights (rows x reference
    documents), at least one row; the default is chunk_rows rows below 65,536 reference documents
    (MQ2008's and OHSUMED's folds: their results as before the bound)."""
    import rankstudy.scorers.kernel as kernel

    data = tied_split()
    N = len(data.y)
    for budget, chunk_rows, rows in [(10 * N, 256, 10), (10 * N + N - 1, 4, 4), (N - 1, 256, 1), (1 << 30, 7, 7)]:
        monkeypatch.setattr(kernel, "KERNEL_BLOCK_ELEMENTS", budget)
        chunks = NadarayaWatsonScorer(data.X, data.y, chunk_rows).bind(data).chunks()
        assert {c.stop - c.start for c in chunks[:-1]} <= {rows} and chunks[-1].stop == N
        assert all(a.stop == b.start for a, b in zip(chunks, chunks[1:]))
    monkeypatch.undo()
    assert kernel.KERNEL_BLOCK_ELEMENTS // 256 == 65_536


def test_structrank_fit_does_not_depend_on_the_chunks(monkeypatch):
    """Two epochs of StructRank (full CDN, Nadaraya-Watson) with one-row chunks and recomputed
    weights reach the bandwidths and CDN weights of one chunk within 1e-9 (rounding only)."""
    import rankstudy.scorers.kernel as kernel

    train, vali = tied_split(0), tied_split(1)
    params = dict(epochs=2, restarts=2, l1_bound=20.0)
    monkeypatch.setattr(kernel, "KERNEL_BLOCK_ELEMENTS", 1 << 30)
    monkeypatch.setattr(kernel, "KEPT_ELEMENTS", 1 << 30)
    whole = StructRank(**params).fit(train, vali)
    monkeypatch.setattr(kernel, "KERNEL_BLOCK_ELEMENTS", 1)
    monkeypatch.setattr(kernel, "KEPT_ELEMENTS", 0)
    chunked = StructRank(**params).fit(train, vali)
    assert chunked.chosen_restart_ == whole.chosen_restart_
    np.testing.assert_allclose(chunked.theta_, whole.theta_, rtol=1e-9)
    np.testing.assert_allclose(chunked.cdn_weights_, whole.cdn_weights_, rtol=1e-9)
    np.testing.assert_allclose(chunked.predict(vali), whole.predict(vali), rtol=1e-9)


def test_per_query_objectives_share_the_reference():
    """SGD holds one objective per training query: each shares the scorer's squared reference
    features and views the split's features, and holds no copy of them (before, each query
    held reference_X ** 2 and two copies of its rows: 1,183 x 153 MB at 1/16 of MSLR-WEB30K)."""
    data = tied_split()
    whole = Objective(NadarayaWatsonScorer(data.X, data.y).bind(data), CDNLoss("full"), data, l2=0.0)
    for q in range(data.n_queries):
        one = whole.for_queries([q])
        assert one.scorer.RX2 is whole.scorer.RX2 and one.scorer.RX is whole.scorer.RX
        assert np.shares_memory(one.scorer.X, data.X)
        assert not hasattr(one.data, "X")
        np.testing.assert_array_equal(one.scorer.X, data.X[data.offsets[q]:data.offsets[q + 1]])


def test_structrank_memory_does_not_grow_with_the_queries():
    """The peak traced allocation of a fit on 200 queries is two chunks of weights (256 x 2,000
    floats: the distances and a matrix product's result) and a few times the training split's
    features (the reference and its squares): measured 9.3 MB; before, each query's objective
    held the squares and two copies of its rows, 147 MB."""
    import tracemalloc

    rng = np.random.default_rng(0)
    lengths = np.full(200, 10)
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    n = int(offsets[-1])
    X = rng.random((n, 40))
    y = rng.integers(0, 3, n).astype(float)
    train = RankData(X=X, y=y, qid=np.repeat(np.arange(200), lengths), docid=np.arange(n).astype(str), offsets=offsets)
    tracemalloc.start()
    try:
        StructRank(topology="disconnected", epochs=1, restarts=1).fit(train)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    features = X.nbytes  # 640 kB
    chunk = 256 * n * 8  # 4 MB
    assert peak < 3 * features + 2.5 * chunk, (peak, features, chunk)


# --------------------------------------------------------------------------- OHSUMED-shaped data

def mean_metric(scores, data, name="ndcg@10"):
    return float(per_query(scores, data.y, data.offsets, [name])[name].mean())


def random_metric(data, name="ndcg@10", draws=20):
    rng = np.random.default_rng(0)
    return float(np.mean([mean_metric(rng.random(len(data.y)), data, name) for _ in range(draws)]))


def curve(model):
    """The chosen restart's training loss per epoch (step 0: the start)."""
    return [h[f"restart{model.chosen_restart_}_train_loss"] for h in model.history_]


def fig4(variant, **overrides):
    return StructRank(**{**FIG4["methods"][variant]["params"], **overrides})


# the objective at the end relative to its start after 3 epochs, with a margin over the measured
# value (OHSUMED-shaped data): at l1_bound 10, 45 bandwidths and 2 CDN weights share a budget of
# 10, so the Nadaraya-Watson variants move less (measured 0.965-0.981; full-linear 0.755); at 100,
# 0.670-0.739. The paper's recipe: 1.000 (not moved) for the three Nadaraya-Watson variants at 10
MAX_RATIO = {10.0: 0.99, 100.0: 0.85}


@pytest.fixture(scope="module")
def shaped():
    kw = dict(n_features=45, n_informative=10, noise=4.0, cuts=(0.65, 0.85), positive_weights=True)
    return ohsumed_shaped(0, n_queries=12, **kw), ohsumed_shaped(1, n_queries=8, **kw)


@pytest.mark.parametrize("l1_bound", [10.0, 100.0])
@pytest.mark.parametrize("variant", VARIANTS)
def test_every_fig4_variant_learns_on_ohsumed_shaped_data(shaped, variant, l1_bound):
    """Each StructRank variant of the study at both l1_bound values of its grid: the training
    loss never rises above its start, ends below it, and the test NDCG@10 is far above a random
    ranking's (measured 0.64-0.67; random 0.21). The paper's literal recipe (the defaults
    before) failed in 6 of the 8 cases: at l1_bound 10 for the three Nadaraya-Watson variants
    (updates skipped on the boundary: the loss did not move), at 100 for both full CDNs (the
    training loss rose to 1.10x and 7.8x its start) and for the disconnected one (0.88)."""
    train, test = shaped
    model = fig4(variant, l1_bound=l1_bound, epochs=3, restarts=1).fit(train)
    losses = curve(model)
    assert max(losses) <= losses[0] * (1 + 1e-9), losses
    assert model.objective_trace_["final"] < MAX_RATIO[l1_bound] * model.objective_trace_["start"], \
        model.objective_trace_
    assert mean_metric(model.predict(test), test) > random_metric(test) + 0.2


def test_the_papers_recipe_stalls_on_the_l1_boundary(shaped):
    """The literal recipe is still there (reduction=sum, feasibility=halve, step_rule=plain)
    and shows the cause: started on the boundary of the L1 ball of 10, where every gradient
    points outwards, each update was halved 31 times and skipped, and the loss did not move;
    the projected AdaGrad step lowers it (measured 0.693 -> 0.669) without halving or skipping."""
    train, _ = shaped
    literal = StructRank(topology="disconnected", l1_bound=10.0, epochs=2, restarts=1, **LITERAL).fit(train)
    fixed = StructRank(topology="disconnected", l1_bound=10.0, epochs=2, restarts=1).fit(train)
    steps = literal.history_[1:]
    assert sum(h["restart0_skipped"] for h in steps) > len(steps) * train.n_queries / 2
    assert sum(h["restart0_halvings"] for h in steps) > 0
    assert literal.objective_trace_["final"] > 0.999 * literal.objective_trace_["start"]
    assert fixed.objective_trace_["final"] < 0.985 * fixed.objective_trace_["start"]
    assert all(h["restart0_skipped"] == 0 and h["restart0_halvings"] == 0 for h in fixed.history_)


# --------------------------------------------------------------------------- preferences failing together

def corrupted_split(corrupt_share=0.4):
    """Training and validation queries with 40% of their labels shuffled (all of such a query's
    preferences wrong at once); a clean test split."""
    from rankstudy.data.synthetic import make_parts
    from rankstudy.features.normalize import Normalizer

    parts = make_parts(seed=1, n_queries=300, n_features=17, max_len=40, median_len=15, corrupt_share=corrupt_share)
    clean = make_parts(seed=1, n_queries=300, n_features=17, max_len=40, median_len=15)
    train, vali, test = RankData.concat(parts[:3]), parts[3], clean[4]
    norm = Normalizer("querylevel").fit(train)
    return tuple(norm.transform(d) for d in (train, vali, test))


def test_training_is_robust_when_preferences_fail_together():
    """Replaces the claim that the full CDN beats the disconnected one by 0.03 NDCG@10 here: it
    held only for a training procedure too fragile to tell the topologies apart (the paper's
    recipe: 0.50-0.68 (full) and 0.46-0.58 (disconnected) from seed to seed, its loss ending up
    to 8x above its start, and the difference 0.05 here, 0.016 on a fresh install). With the
    training made robust both topologies reach 0.745-0.760 from every seed (random: 0.48; linear
    RankNet by L-BFGS: 0.77) and the full CDN is ahead by 0.007 only, so the test asserts what
    holds with margin: every seed learns, seeds agree, and the full CDN is not worse."""
    train, vali, test = corrupted_split()
    ndcg = {}
    for topology in ("full", "disconnected"):
        ndcg[topology] = []
        for seed in range(3):
            model = StructRank(topology=topology, ranking_function="linear", epochs=5, restarts=1, seed=seed,
                               l1_bound=50.0).fit(train, vali)
            assert model.objective_trace_["final"] < 0.95 * model.objective_trace_["start"]
            ndcg[topology].append(mean_metric(model.predict(test), test))
    random = random_metric(test)
    for topology, values in ndcg.items():
        assert min(values) > random + 0.2, (topology, values, random)
        assert max(values) - min(values) < 0.03, (topology, values)
    assert np.mean(ndcg["full"]) > np.mean(ndcg["disconnected"]) - 0.01, ndcg


def test_full_cdn_discounts_a_query_whose_preferences_fail_together():
    """The mechanism behind the paper's claim, on the loss alone: for scores that follow the
    labels, shuffling the labels (every preference at risk at once) multiplies a query's
    gradient less under the full CDN, whose bivariate sigmoids share the blame of two violated
    preferences (log(1 + a + b) < log(1 + a) + log(1 + b)), than under the disconnected one
    (measured: 2.6x against 3.2x at w1 = w2 = 2)."""
    rng = np.random.default_rng(0)
    y = rng.choice(3, 40, p=[0.65, 0.2, 0.15]).astype(float)
    s, mask = pad(y + 0.7 * rng.normal(size=40), np.array([0, 40]))
    growth = {}
    for topology in ("full", "disconnected"):
        size = []
        for labels in (y, rng.permutation(y)):
            padded, _ = pad(labels, np.array([0, 40]))
            _, grad, _ = cdn_with_weights(s, padded, mask, topology=topology, w1=2.0, w2=2.0, reduction="mean")
            size.append(np.abs(grad).sum())
        growth[topology] = size[1] / size[0]
    assert 1.5 < growth["full"] < 0.9 * growth["disconnected"], growth


# --------------------------------------------------------------------------- real OHSUMED, fold 1

@pytest.fixture(scope="module")
def fold1(ohsumed_fold):
    """The study's cleaning (drop training queries without a relevant document); the training
    split cut to the half of its queries with the fewest order-graph edges (31 queries, at most
    3,604 edges: 1.1e8 cliques of the full CDN instead of 4.5e9), so each test stays short."""
    splits = ohsumed_fold(1, {"drop_no_relevant": ["train"]})
    train = splits["train"]
    edges = np.array([len(order_edges(train.y[a:b])[0]) for a, b in zip(train.offsets[:-1], train.offsets[1:])])
    return {**splits, "train": train.select_queries(edges <= np.median(edges))}


@pytest.fixture(scope="module")
def ranksvm_test(fold1):
    ranker = LinearRanker(loss="ranksvm", l2=1.0, max_iter=200).fit(fold1["train"])
    return {m: mean_metric(ranker.predict(fold1["test"]), fold1["test"], m) for m in ("ndcg@10", "map")}


# the objective at the end relative to its start on fold 1's short half, measured 0.923 (full),
# 0.924 (random), 0.897 (disconnected), 0.939 (full-linear): a constant score's loss is the
# start's log 3 (log 2 disconnected), and OHSUMED's grades overlap, so no ranking gets far below
OHSUMED_MAX_RATIO = {"CDN-full": 0.95, "CDN-random": 0.95, "CDN-disconnected": 0.93, "CDN-full-linear": 0.96}


@pytest.mark.parametrize("variant", VARIANTS)
def test_every_fig4_variant_learns_on_ohsumed(fold1, ranksvm_test, variant):
    """Each StructRank variant of the study at l1_bound 100, 3 epochs from one start: the
    training loss never rises and ends well below its start, and validation and test NDCG@10
    and MAP are far above a random ranking's and near RankSVM's on the same training queries
    (measured: test NDCG@10 0.357-0.372 and MAP 0.340-0.346, RankSVM 0.344 and 0.321, random
    0.127 and 0.199; validation 0.418-0.439 and 0.426-0.441, random 0.221 and 0.331). The
    paper's recipe failed each: its training loss rose (to 1.14x-44x its start at some epoch)."""
    model = fig4(variant, l1_bound=100.0, epochs=3, restarts=1).fit(fold1["train"])
    losses = curve(model)
    assert max(losses) <= losses[0] * (1 + 1e-9), losses
    assert model.objective_trace_["final"] < OHSUMED_MAX_RATIO[variant] * model.objective_trace_["start"], \
        model.objective_trace_
    for split in ("vali", "test"):
        data = fold1[split]
        scores = model.predict(data)
        assert mean_metric(scores, data, "ndcg@10") > random_metric(data, "ndcg@10") + 0.15, split
        assert mean_metric(scores, data, "map") > random_metric(data, "map") + 0.06, split
    test = fold1["test"]
    assert mean_metric(model.predict(test), test, "ndcg@10") > ranksvm_test["ndcg@10"] - 0.06
    assert mean_metric(model.predict(test), test, "map") > ranksvm_test["map"] - 0.04
