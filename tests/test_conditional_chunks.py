"""The conditional models' sample in chunks of queries (issue 43): any chunk size gives the
states, Deltas, coefficients, objective values and gradients of one (Q, S, L) array to the
bit, and the sample's memory grows with the documents, not with queries x the longest query."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

from losscheck import make_batch
from rankstudy.data.blocks import pad
from rankstudy.losses import conditional
from rankstudy.losses.conditional import chunked_objective, draw_chunks, sample_objective
from rankstudy.losses.registry import LOSSES
from rankstudy.losses.swap_sampler import SamplerSettings

OBJECTIVES = ["mle", "convex_loss", "l3", "exp_gain"]
ONE_CHUNK = 1 << 40


def mixed_batch(seed: int):
    """make_batch's queries (label ties, a one-document query, an all-equal one) with a query of
    37 documents, two empty rows and padding columns after the widest query, so that the
    chunks' widths (8, 16, 40) are neither the queries' nor the split's (44)."""
    s, y, mask = make_batch(seed)
    rng = np.random.default_rng(seed)
    lengths = [37, 12]
    offsets = np.cumsum([0] + lengths)
    y2, m2 = pad(rng.integers(0, 3, offsets[-1]).astype(float), offsets)
    s2, _ = pad(rng.normal(size=offsets[-1]), offsets)
    width = 44
    rows = [np.pad(a, ((0, 2), (0, width - a.shape[1]))) for a in (s, y, mask)]
    more = [np.pad(a, ((0, 0), (0, width - a.shape[1]))) for a in (s2, y2, m2)]
    return tuple(np.concatenate([a, b]) for a, b in zip(rows, more))


@pytest.mark.parametrize("gain", ["auc", "map", "ndcg"])
@pytest.mark.parametrize("normalize", [False, True])
def test_chunks_give_the_one_array_sample_and_objectives_to_the_bit(gain, normalize):
    s, y, mask = mixed_batch(3)
    settings = SamplerSettings(sample_size=40, walk_length=5, seed=2)
    one = draw_chunks(y, mask, gain=gain, normalize=normalize, settings=settings, block_elements=ONE_CHUNK)
    tiny = draw_chunks(y, mask, gain=gain, normalize=normalize, settings=settings, block_elements=1)
    assert len(one.chunks) == 1 and len(tiny.chunks) == int(one.active.sum()) > 3
    # every chunk narrower than the split: its widest query rounded up to 8 columns
    assert sorted({part.coef.shape[2] for _, part in tiny.chunks}) == [8, 16, 40]
    assert one.states == tiny.states and any(part.coef.shape[1] < tiny.states for _, part in tiny.chunks)
    for a, b in zip(one.dense(), tiny.dense()):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(one.sizes, tiny.sizes)
    for name in OBJECTIVES:
        whole = sample_objective(name, s, one.dense())
        for got in (chunked_objective(name, s, one), chunked_objective(name, s, tiny)):
            np.testing.assert_array_equal(got[0], whole[0])
            np.testing.assert_array_equal(got[1], whole[1])


@pytest.mark.parametrize("name,options", [("mle", {}), ("convex_loss", {"gain": "ndcg"}), ("l3", {"gain": "map"}),
                                          ("exp_gain", {"gain": "auc", "normalize": True})])
def test_the_losses_do_not_depend_on_the_chunk_size(name, options, monkeypatch):
    s, y, mask = mixed_batch(4)
    results = []
    for block in (conditional.SAMPLE_BLOCK_ELEMENTS, 1):
        monkeypatch.setattr(conditional, "SAMPLE_BLOCK_ELEMENTS", block)
        monkeypatch.setattr(conditional, "_CACHE", type(conditional._CACHE)())  # draw again
        results.append(LOSSES[name](s, y, mask, sample_size=30, **options))
        sample = next(iter(conditional._CACHE.values()))
        assert len(sample.chunks) == (1 if block > 1 else int(sample.active.sum())) and sample.active.sum() > 3
    assert results[0][0] == results[1][0]
    np.testing.assert_array_equal(results[0][1], results[1][1])


def test_the_sample_grows_with_the_documents_not_queries_times_the_longest_query():
    """200 queries of 6-12 documents and one of 400: one (Q, S, L) array holds 201 x S x 400
    coefficients; the chunks hold S x (the documents rounded up to 8 per query), and drawing
    them in small chunks peaks below a third of that one array."""
    rng = np.random.default_rng(0)
    lengths = np.r_[rng.integers(6, 13, 200), 400]
    offsets = np.cumsum(np.r_[0, lengths])
    y, mask = pad(rng.integers(0, 3, offsets[-1]).astype(float), offsets)
    settings = SamplerSettings(sample_size=20, walk_length=4)
    draw_chunks(y[:3], mask[:3], settings=settings)  # numba's compilation, outside the measurement
    tracemalloc.start()
    try:
        sample = draw_chunks(y, mask, settings=settings, block_elements=1 << 14)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    stored = sum(part.coef.size for _, part in sample.chunks)
    one_array = len(lengths) * sample.states * mask.shape[1]
    assert stored <= sample.states * (-(-lengths // 8) * 8).sum() < one_array / 15
    # the one array's float64 coefficients alone are 8 x one_array bytes (its draw peaked at 7x that)
    assert peak < 8 * one_array / 3, (peak, 8 * one_array)
