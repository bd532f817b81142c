"""The cutting-plane solver and the structural-SVM ranker: the solver reaches the optimum of an
independently formulated primal QP (SVMauc as one slack per pair), its dual gap closes to
epsilon, every structural SVM learns a certain signal, and the ranker's checks."""

from __future__ import annotations

import numpy as np
import pytest
import qpsolvers
import scipy.sparse as sp

from losscheck import linear_signal_data
from rankstudy.evaluation.metrics import per_query
from rankstudy.rankers.registry import load_ranker, make_ranker
from rankstudy.rankers.structsvm import STRUCTURED_LOSSES, StructSVMRanker
from rankstudy.solvers.cutting_plane import CuttingPlane


def tiny_data(seed=0, n_queries=6):
    data = linear_signal_data(seed)
    keep = np.zeros(data.n_queries, dtype=bool)
    keep[:n_queries] = True
    return data.select_queries(keep)


def primal_auc_qp(data, C, rel_threshold=1.0):
    """min 1/2 ||w||^2 + C sum_q sum_{g,b} xi_gb / (|Q| n+ n-)  s.t.  xi_gb >= 1 - 2 w'(x_g - x_b), xi >= 0:
    SVMauc with one slack per pair, solved in one go (no cutting planes)."""
    rows, weights = [], []
    active = 0
    for q in range(data.n_queries):
        a, b = data.offsets[q], data.offsets[q + 1]
        X, z = data.X[a:b], data.y[a:b] >= rel_threshold
        if z.all() or not z.any():
            continue
        active += 1
        for g in np.flatnonzero(z):
            for j in np.flatnonzero(~z):
                rows.append(X[g] - X[j])
                weights.append(1.0 / (z.sum() * (~z).sum()))
    D, weights = np.array(rows), np.array(weights) * C / active
    d, m = data.n_features, len(rows)
    # variables [w (d), xi (m)]
    P = sp.block_diag([sp.eye(d), sp.csc_matrix((m, m))], format="csc") + 1e-12 * sp.eye(d + m, format="csc")
    q_vec = np.concatenate([np.zeros(d), weights])
    G = sp.hstack([sp.csc_matrix(-2.0 * D), -sp.eye(m)], format="csc")  # 1 - 2 D w - xi <= 0
    h = -np.ones(m)
    lb = np.concatenate([np.full(d, -np.inf), np.zeros(m)])
    x = qpsolvers.solve_qp(P, q_vec, G=G, h=h, lb=lb, solver="clarabel")
    w = x[:d]
    return w, 0.5 * w @ w + weights @ np.maximum(0.0, 1.0 - 2.0 * D @ w)


@pytest.mark.parametrize("C", [0.3, 10.0])
def test_cutting_plane_reaches_the_primal_qp_optimum(C):
    data = tiny_data()
    w_qp, J_qp = primal_auc_qp(data, C)
    ranker = StructSVMRanker(loss="svm_auc", C=C, epsilon=1e-6, max_iter=2000).fit(data)
    objective = ranker.objective(data)
    # J of the ranker is (1/C) times the SVM's objective (l2 = 1/C)
    J_cp = C * objective(ranker.theta_)[0]
    assert ranker.converged_
    assert J_cp == pytest.approx(J_qp, rel=1e-4, abs=1e-6)
    np.testing.assert_allclose(ranker.theta_, w_qp, atol=2e-3 * max(1.0, np.abs(w_qp).max()))


def test_dropping_unused_planes_keeps_the_optimum():
    """With planes dropped after 3 unused iterations the working set stays small and the solver
    still reaches the primal QP's optimum; the lower bound never decreases."""
    data = tiny_data(0, 20)
    C = 10.0
    w_qp, J_qp = primal_auc_qp(data, C)
    ranker = StructSVMRanker(loss="svm_auc", C=C, epsilon=1e-6, max_iter=2000)
    ranker.make_solver = lambda: CuttingPlane(epsilon=1e-6, max_iter=2000, prune_after=3)
    ranker.fit(data)
    history = ranker.history_
    assert ranker.converged_
    assert max(h["working_set"] for h in history) < len(history) - 1  # some plane was dropped
    assert C * ranker.objective(data)(ranker.theta_)[0] == pytest.approx(J_qp, rel=1e-4, abs=1e-6)
    lower = [h["lower_bound"] for h in history]
    assert all(b >= a for a, b in zip(lower, lower[1:])) and max(lower) <= J_qp / C + 1e-9


def test_dual_gap_closes_and_history_is_complete():
    data = tiny_data(1, 20)
    ranker = StructSVMRanker(loss="svm_map", C=10.0, epsilon=1e-4).fit(data, tiny_data(2, 10))
    history = ranker.history_
    assert ranker.converged_ and history[-1]["violation"] <= 1e-4
    gaps = [h["dual_gap"] for h in history]
    assert gaps[-1] <= 1e-4 * 10 and gaps[-1] < gaps[1]
    # the lower bound only grows as planes are added, and stays below every objective seen
    lower = [h["lower_bound"] for h in history]
    assert all(b >= a - 1e-7 for a, b in zip(lower, lower[1:]))
    assert max(lower) <= min(h["objective"] for h in history) + 1e-9
    for key in ("objective", "train_loss", "vali_loss", "working_set", "argmax_seconds", "qp_seconds", "dual_gap"):
        assert all(key in h for h in history), key
    assert [h["working_set"] for h in history] == list(range(len(history)))


def mean_metric(scores, data, name):
    return float(per_query(scores, data.y, data.offsets, [name])[name].mean())


@pytest.mark.parametrize("loss", STRUCTURED_LOSSES)
def test_every_structural_svm_learns_the_signal(loss):
    train, test = linear_signal_data(0), linear_signal_data(1)
    ranker = StructSVMRanker(loss=loss, C=10.0).fit(train)
    rng = np.random.default_rng(0)
    random = np.mean([mean_metric(rng.random(len(test.y)), test, "ndcg@10") for _ in range(10)])
    learned = mean_metric(ranker.predict(test), test, "ndcg@10")
    assert ranker.converged_
    assert learned > random + 0.2, (loss, learned, random)


def test_save_load_and_config_round_trip(tmp_path):
    data = tiny_data(0, 15)
    params = {"loss": "svm_combo", "C": 5.0, "loss_params": {"criteria": ["map", "mrr"], "slacks": "shared"}}
    ranker = make_ranker("structsvm", params).fit(data)
    ranker.save(tmp_path / "m.json")
    back = load_ranker(tmp_path / "m.json")
    assert back.get_params() == ranker.get_params()
    np.testing.assert_array_equal(back.predict(data), ranker.predict(data))


def test_checks():
    with pytest.raises(ValueError, match="not a structured loss"):
        StructSVMRanker(loss="ranknet")
    with pytest.raises(ValueError, match="unknown loss"):
        StructSVMRanker(loss="svm_nope")
    with pytest.raises(ValueError, match="C must be"):
        StructSVMRanker(C=0.0)
    with pytest.raises(ValueError, match="unknown option"):
        StructSVMRanker(loss="svm_auc", loss_params={"k": 3})
    with pytest.raises(ValueError, match="epsilon"):
        CuttingPlane(epsilon=0.0)
    with pytest.raises(ValueError, match="not installed"):
        CuttingPlane(qp_solver="no-such-solver")
    with pytest.raises(ValueError, match="rel_epsilon"):
        CuttingPlane(rel_epsilon=0.0)
    with pytest.raises(ValueError, match="prune_after"):
        CuttingPlane(prune_after=0)
    with pytest.raises(ValueError, match="latent_rounds"):
        StructSVMRanker(loss="dorm", latent_rounds=0)
    with pytest.raises(ValueError, match="unknown option"):
        StructSVMRanker(loss="svm_map", loss_params={"latent": True})  # only DORM, SVMmrr, SVMcombo
