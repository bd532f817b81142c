"""Every loss (with each of its weights or variants) x every rank functional (linear, quadratic)
x every training grouping (none, min, max, mean, geomean): the gradient of the ranker's
objective with respect to its parameters matches central finite differences."""

from __future__ import annotations

import numpy as np
import pytest

from rankstudy.data.rankdata import RankData
from rankstudy.losses.elementwise import ELEMENT_WEIGHTS
from rankstudy.losses.groups import GROUP_AGGREGATES
from rankstudy.losses.registry import LOSSES
from rankstudy.losses.pairwise import PAIR_WEIGHTS, PHIS, WUB_WEIGHTS
from rankstudy.rankers.linear import LinearRanker

WEIGHTED_ELEMENTWISE = ("weighted_regression", "wpl", "rpl", "wpll")


def loss_variants() -> list[tuple[str, dict]]:
    variants = []
    for name in sorted(LOSSES):
        if name in WEIGHTED_ELEMENTWISE:
            variants += [(name, {"weight": w}) for w in ELEMENT_WEIGHTS]
        elif name == "pairwise":
            variants += [(name, {"phi": p, "weight": w}) for p in PHIS for w in PAIR_WEIGHTS]
        elif name == "wub":
            variants += [(name, {"weight": w}) for w in WUB_WEIGHTS]
        elif name == "smoothed_ndcg":
            variants += [(name, {"k": 3}), (name, {})]
        else:
            variants.append((name, {}))
    return variants


@pytest.fixture(scope="module")
def data() -> RankData:
    rng = np.random.default_rng(3)
    lengths = np.array([2, 5, 4, 6, 1, 3])
    n = int(lengths.sum())
    X = rng.normal(size=(n, 3))
    y = rng.integers(0, 3, n).astype(float)
    return RankData(X=X, y=y, qid=np.repeat(np.arange(len(lengths)), lengths),
                    docid=np.arange(n).astype(str), offsets=np.concatenate([[0], np.cumsum(lengths)]))


def test_every_registered_loss_is_covered():
    assert {name for name, _ in loss_variants()} == set(LOSSES)
    assert len(loss_variants()) > 60


@pytest.mark.parametrize("group", [None, *GROUP_AGGREGATES])
@pytest.mark.parametrize("functional", ["linear", "quadratic"])
@pytest.mark.parametrize("loss, options", loss_variants(), ids=lambda v: str(v))
def test_objective_gradient(data, loss, options, functional, group):
    pairs = [[0, 1], [1, 2], [2, 2]] if functional == "quadratic" else None
    ranker = LinearRanker(loss=loss, loss_params=options, l2=0.3, functional=functional, pairs=pairs,
                          group=group)
    objective = ranker.objective(data)
    theta = np.random.default_rng(7).normal(0, 0.7, objective.n_params)
    value, grad = objective(theta)
    assert np.isfinite(value)
    eps = 1e-6
    numeric = np.array([(objective(theta + eps * e)[0] - objective(theta - eps * e)[0]) / (2 * eps)
                        for e in np.eye(len(theta))])
    np.testing.assert_allclose(grad, numeric, rtol=1e-5, atol=1e-7)
