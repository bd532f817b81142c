"""Group-level functionals: hand-worked aggregates and backward shares, finite-difference
gradients of grouped losses, padding invariance, stability and unknown names."""

from __future__ import annotations

import math

import numpy as np
import pytest

from rankstudy.data.blocks import pad
from rankstudy.losses.groups import GROUP_AGGREGATES, group_scores, grouped_loss
from rankstudy.losses.registry import LOSSES, get_loss
from rankstudy.losses.baseline import listmle

NAN = float("nan")
# query 0: labels 2, 0, 2, 1, 0 -> groups (label 2: cols 0, 2), (label 1: col 3), (label 0: cols 1, 4)
# query 1: all label 1, a tie at the top score; two padded columns holding NaN
SCORES = np.array([[1.0, 3.0, -1.0, 0.5, 2.0],
                   [0.2, 0.2, -0.4, NAN, NAN]])
LABELS = np.array([[2.0, 0.0, 2.0, 1.0, 0.0],
                   [1.0, 1.0, 1.0, NAN, NAN]])
MASK = np.array([[True] * 5, [True, True, True, False, False]])

EXPECTED = {
    "min": [[-1.0, 0.5, 2.0], [-0.4, 0, 0]],
    "max": [[1.0, 0.5, 3.0], [0.2, 0, 0]],
    "mean": [[0.0, 0.5, 2.5], [0.0, 0, 0]],
    "geomean": [[math.log(math.cosh(1.0)), 0.5, math.log((math.e ** 3 + math.e ** 2) / 2)],
                [math.log((2 * math.exp(0.2) + math.exp(-0.4)) / 3), 0, 0]],
}


def softmax(v):
    e = np.exp(np.asarray(v) - np.max(v))
    return e / e.sum()


# gradient [[1, 2, 3], [4, 0, 0]] on the groups, pulled back to the documents
EXPECTED_BACKWARD = {
    "min": [[0.0, 0.0, 1.0, 2.0, 3.0], [0.0, 0.0, 4.0, 0, 0]],
    "max": [[1.0, 3.0, 0.0, 2.0, 0.0], [2.0, 2.0, 0.0, 0, 0]],  # tie at 0.2: split equally
    "mean": [[0.5, 1.5, 0.5, 2.0, 1.5], [4 / 3, 4 / 3, 4 / 3, 0, 0]],
    "geomean": [[softmax([1, -1])[0], 3 * softmax([3, 2])[0], softmax([1, -1])[1], 2.0, 3 * softmax([3, 2])[1]],
                [*(4 * softmax([0.2, 0.2, -0.4])), 0, 0]],
}


@pytest.mark.parametrize("agg", GROUP_AGGREGATES)
def test_hand_worked_query(agg):
    gscores, glabels, gmask, backward = group_scores(SCORES, LABELS, MASK, agg)
    np.testing.assert_array_equal(gmask, [[True, True, True], [True, False, False]])
    np.testing.assert_array_equal(glabels, [[2.0, 1.0, 0.0], [1.0, 0.0, 0.0]])  # label descending
    np.testing.assert_allclose(gscores, EXPECTED[agg], rtol=1e-14, atol=1e-15)
    grad = backward(np.array([[1.0, 2.0, 3.0], [4.0, 9.0, 9.0]]))  # 9s sit on padded groups
    np.testing.assert_allclose(grad, EXPECTED_BACKWARD[agg], rtol=1e-14, atol=1e-15)


def make_batch(seed: int, lengths=(1, 2, 6, 9, 4, 8, 5)):
    """Continuous scores (no score ties: min/max are differentiable), labels 0-3 with label ties,
    an all-equal-label query (1 group) and padding."""
    rng = np.random.default_rng(seed)
    lengths = np.asarray(lengths)
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    n = int(offsets[-1])
    labels = rng.integers(0, 4, n).astype(float)
    labels[offsets[4]:offsets[5]] = 3.0
    s, mask = pad(1.5 * rng.normal(size=n), offsets)
    y, _ = pad(labels, offsets)
    return s, y, mask


def finite_difference(fn, s, mask, h=1e-6):
    grad = np.zeros_like(s)
    for idx in zip(*np.nonzero(mask)):
        step = np.zeros_like(s)
        step[idx] = h
        grad[idx] = (fn(s + step) - fn(s - step)) / (2 * h)
    return grad


@pytest.mark.parametrize("agg", GROUP_AGGREGATES)
@pytest.mark.parametrize("seed", [0, 1])
def test_grouped_listmle_gradient_matches_finite_differences(agg, seed):
    s, y, mask = make_batch(seed)
    loss = grouped_loss(listmle, agg)
    value, grad = loss(s, y, mask)
    assert value > 0
    numeric = finite_difference(lambda v: loss(v, y, mask)[0], s, mask)
    assert np.linalg.norm(grad - numeric) / np.linalg.norm(numeric) < 1e-6
    assert np.all(grad[~mask] == 0)


@pytest.mark.parametrize("name", sorted(LOSSES))
def test_every_loss_can_be_grouped(name):
    s, y, mask = make_batch(2)
    loss = grouped_loss(get_loss(name), "geomean")
    _, grad = loss(s, y, mask)
    numeric = finite_difference(lambda v: loss(v, y, mask)[0], s, mask)
    assert np.linalg.norm(grad - numeric) / np.linalg.norm(numeric) < 1e-6


@pytest.mark.parametrize("agg", GROUP_AGGREGATES)
def test_grouped_value_is_the_loss_of_the_group_arrays(agg):
    s, y, mask = make_batch(3)
    gscores, glabels, gmask, _ = group_scores(s, y, mask, agg)
    assert grouped_loss(listmle, agg)(s, y, mask, seed=5)[0] == listmle(gscores, glabels, gmask, seed=5)[0]
    # groups have distinct labels, so the result is not the plain document-level loss
    assert grouped_loss(listmle, agg)(s, y, mask)[0] != pytest.approx(listmle(s, y, mask)[0])


def test_padding_never_leaks():
    s, y, mask = make_batch(4)
    garbage_s = np.where(mask, s, np.inf)
    garbage_y = np.where(mask, y, NAN)
    for agg in GROUP_AGGREGATES:
        loss = grouped_loss(listmle, agg)
        value, grad = loss(s, y, mask)
        value2, grad2 = loss(garbage_s, garbage_y, mask)
        assert value == value2
        np.testing.assert_array_equal(grad, grad2)


def test_geomean_is_stable_for_large_scores():
    s = np.array([[1000.0, 999.0, -1000.0]])
    y = np.array([[1.0, 1.0, 0.0]])
    gscores, _, _, backward = group_scores(s, y, np.ones((1, 3), bool), "geomean")
    np.testing.assert_allclose(gscores, [[1000.0 + math.log((1 + math.exp(-1)) / 2), -1000.0]])
    assert np.all(np.isfinite(backward(np.ones((1, 2)))))


def test_empty_batch():
    gscores, glabels, gmask, backward = group_scores(np.zeros((2, 3)), np.zeros((2, 3)),
                                                     np.zeros((2, 3), bool), "max")
    assert not gmask.any()
    assert backward(np.ones(gscores.shape)).shape == (2, 3)
    assert grouped_loss(listmle, "mean")(np.zeros((2, 3)), np.zeros((2, 3)), np.zeros((2, 3), bool))[0] == 0.0


def test_unknown_aggregate_lists_valid_ones():
    with pytest.raises(ValueError) as err:
        grouped_loss(listmle, "median")
    assert "median" in str(err.value) and all(a in str(err.value) for a in GROUP_AGGREGATES)
    with pytest.raises(ValueError, match="median"):
        group_scores(SCORES, LABELS, MASK, "median")
