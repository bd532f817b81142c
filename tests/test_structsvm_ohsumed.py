"""Structural SVMs on OHSUMED-shaped data (long queries, a third of the documents relevant,
classes that overlap, features scaled to [0, 1] per query with many ties) and on real OHSUMED
(fold 1, the Figure 9 study's cleaning): every method of Figure 9 learns (its training
objective well below the start at w = 0, test accuracy far above a random ranking and near
RankSVM's), DORM and SVMmrr through their latent form, while the paper's literal recipes stay
at w = 0; the cutting plane solves a decrease smaller than its absolute tolerance, and its QP
at a very large C; loss-augmented inference on real queries is never beaten by other rankings."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import yaml

from losscheck import ohsumed_shaped
from rankstudy.data.rankdata import RankData
from rankstudy.evaluation.metrics import per_query
from rankstudy.losses import inference
from rankstudy.rankers.linear import LinearRanker
from rankstudy.rankers.structsvm import StructSVMRanker
from structured_reference import ap_delta, decay, ndcg_delta, po_difference

ROOT = Path(__file__).resolve().parents[1]
FIG9 = yaml.safe_load((ROOT / "config/studies/chakrabarti2008-fig9.yaml").read_text())
FIG9_CLEANING = {"drop_no_relevant": ["train"], "chakrabarti": ["train", "vali", "test"]}
# the study's structural SVMs; the *-literal ones are the paper's recipes, shown beside them, which
# stay at w = 0 (test_literal_recipes_stay_at_w_zero_on_ohsumed_shaped_data)
STRUCTSVM = [name for name in FIG9["run_methods"]
             if FIG9["methods"].get(name, {}).get("kind") == "structsvm" and not name.endswith("-literal")]


def mean_metric(scores, data, name):
    return float(per_query(scores, data.y, data.offsets, [name])[name].mean())


def random_metric(data, name, draws=20):
    rng = np.random.default_rng(0)
    return float(np.mean([mean_metric(rng.random(len(data.y)), data, name) for _ in range(draws)]))


def ratio(ranker):
    return ranker.objective_trace_["final"] / ranker.objective_trace_["start"]


# --------------------------------------------------------------------------- OHSUMED-shaped data

LATENT = [("dorm", {"k": 10, "cut": 30}, 0.97, "ndcg@10"), ("svm_mrr", {"k": 10}, 0.6, "mrr@10")]


@pytest.mark.parametrize("loss,loss_params,max_ratio,metric", LATENT, ids=[c[0] for c in LATENT])
def test_latent_methods_learn_on_ohsumed_shaped_data(loss, loss_params, max_ratio, metric):
    """DORM and SVMmrr (latent form, the default): the objective falls well below its value at
    w = 0 (measured 0.93 and 0.24 of it), the test metric is far above random (measured .81 and
    .95 against .33 and .57); the CCCP rounds never raise the objective."""
    train, test = ohsumed_shaped(0), ohsumed_shaped(1)
    ranker = StructSVMRanker(loss=loss, C=10.0, loss_params=loss_params).fit(train)
    assert ratio(ranker) < max_ratio
    assert mean_metric(ranker.predict(test), test, metric) > random_metric(test, metric) + 0.2
    history = ranker.history_
    assert history[0]["objective"] == pytest.approx(ranker.objective_trace_["start"])
    ends = [h["latent_objective"] for h in history if "latent_objective" in h]
    assert len(ends) > 1
    # the rounds keep the best objective: the result is the lowest any round reached
    assert ranker.objective_trace_["final"] == pytest.approx(min(ends))
    for r in range(1, len(ends)):
        # a round starts where the objective is, at the best w so far (its bound touches it there)
        first = next(h for h in history if h["round"] == r)
        assert first["objective"] == pytest.approx(min(ends[:r]))


@pytest.mark.parametrize("loss,loss_params,max_ratio,metric", LATENT, ids=[c[0] for c in LATENT])
def test_literal_recipes_stay_at_w_zero_on_ohsumed_shaped_data(loss, loss_params, max_ratio, metric):
    """The paper's recipes (latent=False: DORM's average goods-first y*, SVMmrr's lowest-scored
    good) have their optimum at w = 0 on such data, at any C: the reason for the latent form,
    and the option a study can show beside it."""
    train = ohsumed_shaped(0)
    for C in (1.0, 100.0):
        ranker = StructSVMRanker(loss=loss, C=C, loss_params={**loss_params, "latent": False}).fit(train)
        assert ratio(ranker) > 0.999
        assert np.linalg.norm(ranker.theta_) < 0.05


def test_relative_tolerance_solves_a_decrease_smaller_than_epsilon():
    """SVMndcg at C = 0.1 on OHSUMED-like data can lower its objective by about 2e-5 in all:
    stopped by the absolute epsilon = 1e-3 alone it returned a w with an objective above the
    start (4.5 times the whole decrease off the optimum); the relative rule gets within a tenth."""
    train = ohsumed_shaped(0, noise=1.0)
    tight = StructSVMRanker(loss="svm_ndcg", C=0.1, epsilon=1e-10, max_iter=3000).fit(train)
    objective = tight.objective(train)
    start = objective(np.zeros(train.n_features), need_grad=False)[0]
    best = objective(tight.theta_, need_grad=False)[0]
    assert 0 < start - best < 1e-3  # a decrease below the absolute tolerance
    ranker = StructSVMRanker(loss="svm_ndcg", C=0.1).fit(train)
    assert ranker.converged_
    assert objective(ranker.theta_, need_grad=False)[0] - best <= 0.1 * (start - best)


def test_a_flat_hinge_returns_its_minimiser_not_w_zero():
    """SVMndcg at C = 0.01 on sparse-relevance data (2 goods in 200 documents) can gain under
    1e-6 in all, below the stopping rule's floor: the solver returns the certified last w, whose
    direction ranks well, not the best w seen, which was w = 0 with every score tied."""
    rng = np.random.default_rng(4)
    w_true = rng.normal(size=16)
    n_queries, n_docs = 30, 200
    X = rng.uniform(0.0, 1.0, (n_queries * n_docs, 16))
    utility = (X @ w_true + rng.normal(size=len(X))).reshape(n_queries, n_docs)
    y = (utility >= np.sort(utility, axis=1)[:, -2:-1]).astype(float).ravel()
    offsets = np.arange(0, len(X) + 1, n_docs)
    data = RankData(X=X, y=y, qid=np.repeat(np.arange(n_queries), n_docs), docid=np.arange(len(X)).astype(str),
                    offsets=offsets)
    train, test = data.select_queries(np.arange(n_queries) < 20), data.select_queries(np.arange(n_queries) >= 20)
    ranker = StructSVMRanker(loss="svm_ndcg", C=0.01, loss_params={"k": 10}).fit(train)
    assert ranker.objective_trace_["start"] - ranker.objective_trace_["final"] < 1e-6  # a flat hinge
    assert np.linalg.norm(ranker.theta_) > 0
    assert mean_metric(ranker.predict(test), test, "ndcg@10") > random_metric(test, "ndcg@10") + 0.2


def test_working_set_qp_is_solved_at_a_very_large_C():
    """Literal DORM at C = 1e8 (w stays near 0, the planes nearly parallel): the QP in its dual
    form was not solved by Clarabel (RuntimeError); in the primal it is, and the dual value
    stays a lower bound."""
    train = ohsumed_shaped(0, n_queries=10)
    ranker = StructSVMRanker(loss="dorm", C=1e8, max_iter=60, loss_params={"k": 10, "cut": 30, "latent": False})
    ranker.fit(train)
    history = ranker.history_
    assert max(h["lower_bound"] for h in history) <= min(h["objective"] for h in history) + 1e-9


# --------------------------------------------------------------------------- real OHSUMED, fold 1

@pytest.fixture(scope="module")
def fold1(ohsumed_fold):
    return ohsumed_fold(1, FIG9_CLEANING)


@pytest.fixture(scope="module")
def ranksvm_test_ndcg(fold1):
    ranker = LinearRanker(loss="ranksvm", l2=1.0, max_iter=200).fit(fold1["train"])
    return mean_metric(ranker.predict(fold1["test"]), fold1["test"], "ndcg@10")


# the objective at C = 10 relative to its start, with a margin over the measured value: SVMauc
# 0.65, SVMmap 0.92, SVMndcg 0.989, SVMndcg-nc 0.89, SVMmrr 0.60, SVMcombo 0.94, DORM 0.93. SVMndcg
# moves least: Delta_NDCG@10 is 1 for every ranking with ten bads on top, whatever the rest, so
# its hinge is nearly flat around w = 0 (the paper's Figure 5: it "stays close to w = 0")
MAX_RATIO = {"SVMauc": 0.8, "SVMmap": 0.96, "SVMndcg": 0.995, "SVMndcg-nc": 0.95, "SVMmrr": 0.8,
             "SVMcombo": 0.97, "DORM": 0.96}


@pytest.mark.parametrize("method", STRUCTSVM)
def test_figure9_methods_learn_on_ohsumed(fold1, ranksvm_test_ndcg, method):
    """Each structural SVM of the Figure 9 study, with the study's parameters at C = 10: the
    objective below its start, validation and test NDCG@10 far above a random ranking (test
    random .11; measured .38-.42) and within 0.08 of RankSVM's test NDCG@10 (.40)."""
    params = {**FIG9["methods"][method]["params"], "C": 10.0}
    ranker = StructSVMRanker(**params).fit(fold1["train"])
    assert ranker.converged_
    assert ratio(ranker) < MAX_RATIO[method]
    for split in ("vali", "test"):
        data = fold1[split]
        assert mean_metric(ranker.predict(data), data, "ndcg@10") > random_metric(data, "ndcg@10") + 0.15, split
    assert mean_metric(ranker.predict(fold1["test"]), fold1["test"], "ndcg@10") > ranksvm_test_ndcg - 0.08


# the reference solve asks epsilon 1e-10, at the QP solver's own precision: Clarabel ends it
# "AlmostSolved" (a qpsolvers warning), which the comparison below allows for
@pytest.mark.filterwarnings("ignore:Clarabel.rs terminated with status AlmostSolved:UserWarning")
def test_relative_tolerance_on_ohsumed(fold1):
    """SVMndcg at C = 0.1 gains about 2e-4 in all on fold 1: the solution is within a tenth of
    that of the optimum (with the absolute epsilon = 1e-3 alone it stopped after 3 iterations)."""
    train = fold1["train"]
    tight = StructSVMRanker(loss="svm_ndcg", C=0.1, epsilon=1e-10, max_iter=3000).fit(train)
    objective = tight.objective(train)
    start = objective(np.zeros(train.n_features), need_grad=False)[0]
    best = objective(tight.theta_, need_grad=False)[0]
    ranker = StructSVMRanker(loss="svm_ndcg", C=0.1).fit(train)
    assert objective(ranker.theta_, need_grad=False)[0] - best <= 0.1 * (start - best)


def ranking_value(criterion, s, z, rank, k=10, cut=30):
    """Delta(y*, y) - w'(phi(y*) - phi(y)) of the ranking with these ranks (literal forms)."""
    if criterion == "map":
        return ap_delta(z, rank) - po_difference(s, z, rank)
    if criterion in ("ndcg", "ndcg_nc"):
        return ndcg_delta(z, rank, k if criterion == "ndcg" else None) - po_difference(s, z, rank)
    if criterion == "mrr":
        first = rank[z].min()
        g0 = np.flatnonzero(z)[np.argmin(rank[z])]
        before = ~z & (rank < first)
        return (1.0 - 1.0 / (1 + first) if first < k else 1.0) + (s[before] - s[g0]).sum()
    n_good = z.sum()
    a = np.array([decay(r, cut) for r in range(len(s))])
    return ndcg_delta(z, rank, k) + s @ (a[rank] - np.where(z, a[:n_good].mean(), a[n_good:].mean()))


INFERENCE = {"map": inference.map_po, "ndcg": lambda s, z: inference.ndcg_po(s, z, 10),
             "ndcg_nc": lambda s, z: inference.ndcg_po(s, z, None), "mrr": lambda s, z: inference.mrr_mrr(s, z, 10),
             "dorm": lambda s, z: inference.ndcg_dorm(s, z, 10, 30)}


def test_inference_on_real_queries_is_not_beaten_by_other_rankings(fold1):
    """On fold 1's long training queries (up to ~150 documents, many goods, ties at w = 0), at
    w = 0 and along a learnt direction: H >= 0, and no random ranking, nor any swap of two
    documents in the score order, has a larger Delta - w'(phi(y*) - phi(y))."""
    train = fold1["train"]
    direction = StructSVMRanker(loss="svm_auc", C=10.0).fit(train).theta_
    rng = np.random.default_rng(3)
    queries = rng.choice(train.n_queries, 12, replace=False)
    for t in (0.0, 0.3, 3.0):
        scores = train.X @ (t * direction)
        for q in queries:
            a, b = train.offsets[q], train.offsets[q + 1]
            s, z = scores[a:b], train.y[a:b] >= 1
            if z.all() or not z.any():
                continue
            n = len(s)
            order = np.argsort(-s, kind="stable")
            candidates = [rng.permutation(n) for _ in range(5)]
            for _ in range(10):
                swapped = order.copy()
                i, j = rng.integers(0, n, 2)
                swapped[[i, j]] = swapped[[j, i]]
                candidates.append(swapped)
            for criterion, routine in INFERENCE.items():
                value, _ = routine(s, z)
                assert value >= -1e-12
                for perm in candidates:
                    rank = np.empty(n, dtype=int)
                    rank[perm] = np.arange(n)
                    assert ranking_value(criterion, s, z, rank) <= value + 1e-9, (criterion, t, q)
