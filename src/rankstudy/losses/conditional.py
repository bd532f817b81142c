"""Conditional probability models over rankings (Dubey et al. 2009): Pr(y | x; w) proportional
to exp(w' phi_po(x, y)) over the good/bad orderings y of a query, and the objectives trained
on it, as losses over padded scores (conventions in :mod:`rankstudy.losses`).

With v_y = w' phi_po(x, y) - w' phi_po(x, y*) (y* = every good first, so v_y* = 0) and
Delta(y) = 1 - G(y) for G one of AUC, AP, NDCG@k (binary relevance, the paper's discount), per
query:

* ``mle`` (Eq. 10): log sum_y exp(v_y), the negative log-likelihood of y*;
* ``exp_gain`` (Eqs. 6-7): -log E_y[G(y)] = -(log sum_y G(y) e^{v_y} - log sum_y e^{v_y});
* ``l3`` (Eq. 12): L1 + L2, with L2 = E_y[Delta(y)] (Eq. 11);
* ``convex_loss`` (Eq. 14): log sum_y exp(v_y + Delta(y)), a convex upper bound of L1 + L2;
* ``exp_gain_auc``: ExpGain with the AUC gain summed over every y in {-1, +1}^(n+ n-) in
  closed form through the identities of Figure 1 (no sum over y):
  sum_y G(y) e^{v_y} / sum_y e^{v_y} = mean over pairs of sigmoid(2 (s_g - s_b) / c).

The sums over y run over the query's sample (:mod:`rankstudy.losses.swap_sampler`): the
distinct rankings the swap sampler visits, plus y*, drawn once per split (cached on its labels
and options), so the objective is a fixed, smooth function of the scores. As the sample grows
it reaches every total order and the objective becomes exact (tested by enumeration).

The gain acts only through the sample's Deltas, so the sample must hold rankings whose Delta
differs between gains. The default restart states (11, Deltas spread over [0, 1], skew -5:
the paper's Figure 6 setup) do; the paper's Figure 3 recipe (two restart states, ``restart_states=2,
restart_skew=-2.2, restart_spread="bads"``) does not on OHSUMED-like queries, where its rankings
have Delta ~ 0 or ~ 1 for every gain and MLE, L3 and ConvexLoss learn one w (the reasons and
numbers are in :mod:`rankstudy.losses.swap_sampler`). Whatever the sample, the AUC gain is
additive over pairs like w'phi_po: Delta_AUC(y) = #(flipped pairs) / (n+ n-), so
exp(Delta_AUC - w'delta_phi) = prod over the flipped pairs of exp(1/(n+ n-) - 2 (s_g - s_b)),
i.e. ConvexLoss_AUC (and L3_AUC) are MLE with a margin of 1/(2 n+ n-) in score units per pair
(0.0016 on OHSUMED's median query, against median |s_g - s_b| of 0.04-0.18): they stay close
to MLE (cosine >= 0.999 on OHSUMED), as the paper's own Figure 3 numbers for MLE and
ConvexLoss_AUC on OHSUMED are close.

phi_po is the structural SVMs' feature map (:mod:`rankstudy.losses.inference`): per-document
coefficients, so any scorer can train on these losses. ``normalize``: phi_po with its
1/(n+ n-) factor (c = n+ n-) or without it (c = 1), which the paper chose by cross-validation;
the default follows the paper. Queries without a good or a bad document have no term.

The sample is drawn and kept in chunks of queries of similar length (:func:`draw_chunks`), each
padded to its own widest query and number of states and built :data:`SAMPLE_BLOCK_ELEMENTS`
(query, state, document) entries at a time, so a split's sample takes about 8 S bytes per
document (S <= ``sample_size`` + 1 states) instead of queries x S x the longest query (an
MSLR-WEB30K training split: about 1.8 GB instead of 19 GB, which its construction held several
times over). The chunking changes no number: the walks are keyed by the query's row, and the
Deltas, the potentials and the state axis are summed over the widths one (Q, S, L) array would
have, so any chunk size gives the same values and gradients to the bit (tested).
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from typing import NamedTuple

import numpy as np
from scipy.special import expit, logsumexp, softmax

from rankstudy.data.rankdata import REL_THRESHOLD
from rankstudy.evaluation.metrics import K
from rankstudy.losses.padded import PAIR_BLOCK_ELEMENTS, clean, query_chunks, query_weights
from rankstudy.losses.swap_sampler import METRICS, SamplerSettings, deltas, draw_walks

GAINS = METRICS
# (query, state, document) entries of one chunk of a split's sample: 32 MB of coefficients, and
# about ten arrays of that size while the chunk is built (walks, deduplication keys, gathers)
SAMPLE_BLOCK_ELEMENTS = 1 << 22
# a chunk's documents are padded to a multiple of this (or to the split's width): numpy's einsum
# kernel for float64 (x86-64 baseline, two SSE2 lanes) sums a row in blocks of 8 products and
# the rest in pairs, so such a width puts every document in the block and lane it has in one
# (Q, S, L) array, and the potentials come out the same to the bit
WIDTH_ALIGN = 8


class RankingSample(NamedTuple):
    """The rankings of every query: phi_po differences as per-document coefficients ``coef``
    (Q, S', L), w'(phi(y*) - phi(y_j)) = s . coef[q, j]; ``delta`` (Q, S); ``support`` (Q, S) bool
    (real entries; entry 0 is y*); ``active`` (Q,) queries with a good and a bad document.
    ``coef`` holds the first S' <= S states (a chunk of :class:`ChunkedSample` may have fewer
    states than the split's S; the others are outside its support)."""

    coef: np.ndarray
    delta: np.ndarray
    support: np.ndarray
    active: np.ndarray

    @property
    def sizes(self) -> np.ndarray:
        return self.support.sum(axis=1)


class SampleChunk(NamedTuple):
    """The sample of the split's queries ``rows``, on their first ``sample.coef.shape[2]`` columns."""

    rows: np.ndarray
    sample: RankingSample


class ChunkedSample(NamedTuple):
    """A split's sample in chunks of queries of similar length, each padded to its own widest
    query and number of states, so that its memory grows with the sum over queries of states x
    documents, not with queries x the most states x the longest query (MSLR-WEB30K: about 1.8 GB
    instead of 19 GB of coefficients). ``active`` (Q,) and ``shape`` (Q, L) are the split's;
    ``states`` is S, the most states of any query (the state axis every chunk is evaluated on)."""

    chunks: tuple[SampleChunk, ...]
    active: np.ndarray
    shape: tuple[int, int]
    states: int

    @property
    def sizes(self) -> np.ndarray:
        sizes = np.zeros(self.shape[0], dtype=np.int64)
        for chunk in self.chunks:
            sizes[chunk.rows] = chunk.sample.sizes
        return sizes

    def dense(self) -> RankingSample:
        """The whole split as one (Q, S, L) sample (small data: tests, studies)."""
        Q, L = self.shape
        coef, delta = np.zeros((Q, self.states, L)), np.zeros((Q, self.states))
        support = np.zeros((Q, self.states), dtype=bool)
        for rows, part in self.chunks:
            S, width = part.coef.shape[1:]
            coef[rows, :S, :width] = part.coef
            delta[rows], support[rows] = part.delta, part.support
        return RankingSample(coef, delta, support, self.active)


def _goods(labels, mask, rel_threshold):
    good = mask & (labels >= rel_threshold)
    bad = mask & ~good
    P, N = good.sum(axis=1), bad.sum(axis=1)
    return good, bad, P, N, (P > 0) & (N > 0)


def _deltas_in_blocks(beats, n_good, n_bad, gain, k, width, block_elements):
    """:func:`deltas` of the rows of ``beats`` padded (-1) to ``width`` goods, in blocks of rows
    of at most ``block_elements`` entries. Delta_MAP and Delta_NDCG are float sums over the
    padded goods, whose rounding depends on the padded width: a chunk's states are padded to
    the split's widest goods, as when the whole split was one array, so its Deltas are the same
    to the bit (Delta_AUC sums integers: any width gives the same)."""
    if gain == "auc":
        return deltas(beats, n_good, n_bad, gain, k)
    out = np.empty(len(beats))
    step = max(1, block_elements // max(width, 1))
    for start in range(0, len(beats), step):
        block = beats[start:start + step]
        block = np.pad(block, ((0, 0), (0, width - block.shape[1])), constant_values=-1)
        out[start:start + step] = deltas(block, n_good[start:start + step], n_bad[start:start + step], gain, k)
    return out


def support_from_states(labels, mask, beats, beaten, queries, *, rel_threshold: float = REL_THRESHOLD,
                        gain: str = "auc", k: int = K, normalize: bool = False, delta_width: int = 1,
                        block_elements: int | None = None) -> RankingSample:
    """The sample of the states (``beats`` (M, Pmax), ``beaten`` (M, Nmax), -1 / 0 padded) of
    queries ``queries`` (M,) (rows of ``labels``), goods and bads in document order, with y*
    added and duplicates removed (order of first appearance kept). Deltas are computed on the
    goods padded to at least ``delta_width`` (:func:`_deltas_in_blocks`)."""
    _, labels, mask = clean(np.zeros(np.shape(labels)), labels, mask)
    good, bad, P, N, active = _goods(labels, mask, rel_threshold)
    Q, L = mask.shape
    rows = np.flatnonzero(active)
    p_max = max(int(P.max(initial=0)), np.shape(beats)[1] if np.ndim(beats) == 2 else 0, 1)
    n_max = max(int(N.max(initial=0)), np.shape(beaten)[1] if np.ndim(beaten) == 2 else 0, 1)
    # y* of every active query first, so that it is the first of its query after deduplication
    star_beats = np.where(np.arange(p_max)[None, :] < P[rows, None], N[rows, None], -1)
    star_beaten = np.where(np.arange(n_max)[None, :] < N[rows, None], P[rows, None], 0)

    def widen(a, width, fill):
        a = np.asarray(a, dtype=np.int64)
        a = a.reshape(len(a), a.shape[1] if a.ndim == 2 else 0)
        return np.pad(a, ((0, 0), (0, width - a.shape[1])), constant_values=fill)

    all_queries = np.concatenate([rows, np.asarray(queries, dtype=np.int64)])
    all_beats = np.concatenate([star_beats, widen(beats, p_max, -1)])
    all_beaten = np.concatenate([star_beaten, widen(beaten, n_max, 0)])
    if np.any(~active[all_queries]):
        raise ValueError("states given for a query without a good or a bad document")
    # exact deduplication: rows (query, beats, beaten) compared as raw bytes
    key = np.ascontiguousarray(np.concatenate([all_queries[:, None], all_beats, all_beaten], axis=1))
    _, first = np.unique(key.view(np.dtype((np.void, key.dtype.itemsize * key.shape[1]))).ravel(),
                         return_index=True)
    del key
    keep = np.sort(first)
    kq, kb, kn = all_queries[keep], all_beats[keep], all_beaten[keep]
    order = np.argsort(kq, kind="stable")  # group by query, first appearance within
    kq, kb, kn = kq[order], kb[order], kn[order]
    counts = np.bincount(kq, minlength=Q)
    slot = np.arange(len(kq)) - np.repeat(np.cumsum(counts) - counts, counts)
    S = max(int(counts.max(initial=0)), 1)
    support = np.zeros((Q, S), dtype=bool)
    support[kq, slot] = True
    delta = np.zeros((Q, S))
    delta[kq, slot] = _deltas_in_blocks(kb, P[kq], N[kq], gain, k, max(p_max, int(delta_width)),
                                        block_elements or SAMPLE_BLOCK_ELEMENTS)
    # per document: its index among the goods (or bads) of its query
    g_pos = np.clip(np.cumsum(good, axis=1) - 1, 0, None)
    b_pos = np.clip(np.cumsum(bad, axis=1) - 1, 0, None)
    scale = (2.0 / np.maximum(P * N, 1)) if normalize else np.full(Q, 2.0)
    n_good_at = np.zeros((Q, S, p_max))
    n_bad_at = np.zeros((Q, S, n_max))
    n_good_at[kq, slot] = N[kq, None] - kb  # bads before each good
    n_bad_at[kq, slot] = P[kq, None] - kn  # goods after each bad
    coef = np.where(good[:, None, :], np.take_along_axis(n_good_at, np.broadcast_to(g_pos[:, None, :], (Q, S, L)), 2),
                    -np.take_along_axis(n_bad_at, np.broadcast_to(b_pos[:, None, :], (Q, S, L)), 2))
    coef = np.where(mask[:, None, :] & support[:, :, None], coef * scale[:, None, None], 0.0)
    return RankingSample(coef, delta, support, active)


def _aligned(width, split_width: int):
    """A chunk's padded width: its widest query rounded up to a multiple of :data:`WIDTH_ALIGN`
    columns, at most the split's."""
    return np.minimum(-(-np.asarray(width) // WIDTH_ALIGN) * WIDTH_ALIGN, split_width)


def _draw_chunk(labels, mask, rows, P, N, delta_width, *, rel_threshold, gain, k, normalize, settings, backend,
                block_elements) -> RankingSample:
    """The sample of the split's queries ``rows`` (every one active; ``labels``, ``mask`` their
    rows; ``P``, ``N`` their goods and bads). The walks are keyed by the split's rows, so each
    query's states are the ones it gets in any chunk."""
    walks = draw_walks(P, N, rows, settings, gain, k, backend)
    # the first sample_size states of each query's walks (walks of a query are consecutive)
    per_query = settings.n_walks * walks.beats.shape[1]
    beats = walks.beats.reshape(-1, per_query, walks.beats.shape[2])[:, :settings.sample_size]
    beaten = walks.beaten.reshape(-1, per_query, walks.beaten.shape[2])[:, :settings.sample_size]
    order = np.argsort(rows)
    local = order[np.searchsorted(rows, walks.query[::settings.n_walks], sorter=order)]
    queries = np.repeat(local, beats.shape[1])
    return support_from_states(labels, mask, beats.reshape(-1, beats.shape[2]), beaten.reshape(-1, beaten.shape[2]),
                               queries, rel_threshold=rel_threshold, gain=gain, k=k, normalize=normalize,
                               delta_width=delta_width, block_elements=block_elements)


def draw_chunks(labels, mask, *, rel_threshold: float = REL_THRESHOLD, gain: str = "auc", k: int = K,
                normalize: bool = False, settings: SamplerSettings = SamplerSettings(),
                backend: str | None = None, block_elements: int | None = None) -> ChunkedSample:
    """Every active query's swap-sampler sample (``settings.sample_size`` states, restarts by
    Delta of ``gain``), deduplicated, with y*, drawn and stored in chunks of queries of
    similar length holding at most ``block_elements`` (query, state, document) entries (at
    least one query each; default :data:`SAMPLE_BLOCK_ELEMENTS`). Any ``block_elements`` gives
    the same states, coefficients and Deltas (the walks are keyed by the query's row, the Deltas
    padded as for one array)."""
    block_elements = int(block_elements or SAMPLE_BLOCK_ELEMENTS)
    _, labels, mask = clean(np.zeros(np.shape(labels)), labels, mask)
    _, _, P, N, active = _goods(labels, mask, rel_threshold)
    Q, L = mask.shape
    delta_width = max(int(P.max(initial=0)), 1)  # the goods of the widest query, as in one array
    states_per_query = settings.sample_size + 1  # at most: the sample and y*
    chunks = []
    for rows, width in query_chunks(mask, np.flatnonzero(active), block_elements,
                                    lambda widths: states_per_query * _aligned(widths, L)):
        width = int(_aligned(width, L))
        part = _draw_chunk(labels[rows, :width], mask[rows, :width], rows, P[rows], N[rows], delta_width,
                           rel_threshold=rel_threshold, gain=gain, k=k, normalize=normalize, settings=settings,
                           backend=backend, block_elements=block_elements)
        chunks.append(SampleChunk(rows, part))
    S = max((part.delta.shape[1] for _, part in chunks), default=1)

    def widen(a, fill):
        return np.pad(a, ((0, 0), (0, S - a.shape[1])), constant_values=fill)

    chunks = tuple(SampleChunk(rows, RankingSample(part.coef, widen(part.delta, 0.0), widen(part.support, False),
                                                   part.active)) for rows, part in chunks)
    return ChunkedSample(chunks, active, (Q, L), S)


def draw_sample(labels, mask, *, rel_threshold: float = REL_THRESHOLD, gain: str = "auc", k: int = K,
                normalize: bool = False, settings: SamplerSettings = SamplerSettings(),
                backend: str | None = None, block_elements: int | None = None) -> RankingSample:
    """:func:`draw_chunks` as one (Q, S, L) sample (small data: tests, studies)."""
    return draw_chunks(labels, mask, rel_threshold=rel_threshold, gain=gain, k=k, normalize=normalize,
                       settings=settings, backend=backend, block_elements=block_elements).dense()


# --------------------------------------------------------------------------- the sample, once per split

_CACHE: OrderedDict = OrderedDict()
_CACHE_SIZE = 8  # a train and a validation split per grid candidate, with room to spare


def cached_sample(labels, mask, **options) -> ChunkedSample:
    """:func:`draw_chunks`, remembered for the last few (labels, mask, options): the objective
    calls its loss with the same split many times, and the sample must not change between them."""
    labels = np.ascontiguousarray(labels, dtype=np.float64)
    mask = np.ascontiguousarray(mask, dtype=bool)
    digest = hashlib.blake2b(labels.tobytes(), digest_size=16)
    digest.update(mask.tobytes())
    digest.update(repr((labels.shape, sorted(options.items()))).encode())
    key = digest.hexdigest()
    if key in _CACHE:
        _CACHE.move_to_end(key)
        return _CACHE[key]
    sample = draw_chunks(labels, mask, **options)
    _CACHE[key] = sample
    while len(_CACHE) > _CACHE_SIZE:
        _CACHE.popitem(last=False)
    return sample


# --------------------------------------------------------------------------- objectives on a sample

def _potentials(scores, sample: RankingSample) -> np.ndarray:
    """v (Q, S) = w'phi(y_j) - w'phi(y*), -inf outside the support."""
    v = -np.einsum("qsl,ql->qs", sample.coef, scores)
    v = np.pad(v, ((0, 0), (0, sample.support.shape[1] - v.shape[1])))  # states without coefficients
    return np.where(sample.support, v, -np.inf)


def _expectation_grad(p: np.ndarray, sample: RankingSample) -> np.ndarray:
    """d/ds of sum_j p_j v_j for fixed weights p (Q, S): -sum_j p_j coef_j."""
    return -np.einsum("qs,qsl->ql", p[:, :sample.coef.shape[1]], sample.coef)


def _lse(a: np.ndarray):
    """Row log-sum-exp and its softmax over finite entries; 0 for rows without any (queries
    without a sample)."""
    some = np.isfinite(a).any(axis=1)
    a = np.where(some[:, None], a, 0.0)
    return np.where(some, logsumexp(a, axis=1), 0.0), np.where(some[:, None], softmax(a, axis=1), 0.0)


def sample_objective(name: str, scores, sample: RankingSample) -> tuple[np.ndarray, np.ndarray]:
    """Per-query values (Q,) and d value / d scores (Q, L) of objective ``name`` (``mle``,
    ``exp_gain``, ``l2``, ``l3``, ``convex_loss``) over the sample, before averaging."""
    v = _potentials(scores, sample)
    if name == "mle":
        value, p = _lse(v)
        return value, _expectation_grad(p, sample)
    if name == "convex_loss":
        value, p = _lse(v + np.where(sample.support, sample.delta, 0.0))
        return value, _expectation_grad(p, sample)
    if name in ("l2", "l3"):
        log_z, p = _lse(v)
        l2 = (p * np.where(sample.support, sample.delta, 0.0)).sum(axis=1)
        # d l2 / d v_j = p_j (Delta_j - l2)
        grad = _expectation_grad(p * (np.where(sample.support, sample.delta, 0.0) - l2[:, None]), sample)
        if name == "l2":
            return l2, grad
        return log_z + l2, grad + _expectation_grad(p, sample)
    if name == "exp_gain":
        gain = np.where(sample.support, 1.0 - sample.delta, 0.0)
        with np.errstate(divide="ignore"):
            log_gain = np.where(gain > 0, np.log(np.where(gain > 0, gain, 1.0)), -np.inf)
        log_a, q = _lse(v + log_gain)
        log_z, p = _lse(v)
        return log_z - log_a, _expectation_grad(p - q, sample)
    raise ValueError(f"unknown sampled objective {name!r}")


def chunked_objective(name: str, scores, sample: ChunkedSample) -> tuple[np.ndarray, np.ndarray]:
    """:func:`sample_objective` over a split's chunks: values (Q,) and d value / d scores (Q, L);
    each chunk sees its queries' scores on its columns and the split's S states, so every
    query's value and gradient are the ones of one (Q, S, L) sample, to the bit."""
    values, grad = np.zeros(sample.shape[0]), np.zeros(sample.shape)
    for rows, part in sample.chunks:
        width = part.coef.shape[2]
        values[rows], grad[rows, :width] = sample_objective(name, scores[rows, :width], part)
    return values, grad


def _sampled(name: str, scores, labels, mask, rel_threshold, gain, k, normalize, settings):
    s, y, mask = clean(scores, labels, mask)
    sample = cached_sample(y, mask, rel_threshold=rel_threshold, gain=gain, k=k, normalize=normalize,
                           settings=settings)
    values, grad = chunked_objective(name, s, sample)
    weights = query_weights(sample.active)
    values = np.where(sample.active, values, 0.0)
    return float((values * weights).sum()), np.where(mask, grad * weights[:, None], 0.0)


# The losses' defaults: the sampler's are its own (SamplerSettings); the gain's, shared by the
# losses that take one (its k is metrics.K). Each loss's signature carries them (losses.registry
# reads the signature).
SAMPLER = SamplerSettings()
GAIN = "ndcg"


def _settings(sample_size, walk_length, restart_states, restart_skew, seed, restart_spread) -> SamplerSettings:
    return SamplerSettings(int(sample_size), int(walk_length), int(restart_states), float(restart_skew), int(seed),
                           str(restart_spread))


def mle(scores, labels, mask, *, rel_threshold: float = REL_THRESHOLD, normalize: bool = False,
        sample_size: int = SAMPLER.sample_size, walk_length: int = SAMPLER.walk_length,
        restart_states: int = SAMPLER.restart_states, restart_skew: float = SAMPLER.restart_skew,
        seed: int = SAMPLER.seed, restart_spread: str = SAMPLER.restart_spread):
    """MLE (Eq. 10): mean over queries of log sum_y exp(w'phi(y) - w'phi(y*)) over the sample
    (restart states by Delta_AUC). Sampler options as in :mod:`rankstudy.losses.swap_sampler`."""
    settings = _settings(sample_size, walk_length, restart_states, restart_skew, seed, restart_spread)
    return _sampled("mle", scores, labels, mask, rel_threshold, "auc", K, normalize, settings)  # AUC: k unused


def exp_gain(scores, labels, mask, *, gain: str = GAIN, k: int = K, rel_threshold: float = REL_THRESHOLD,
             normalize: bool = False, sample_size: int = SAMPLER.sample_size, walk_length: int = SAMPLER.walk_length,
             restart_states: int = SAMPLER.restart_states, restart_skew: float = SAMPLER.restart_skew,
             seed: int = SAMPLER.seed, restart_spread: str = SAMPLER.restart_spread):
    """ExpGain (Eqs. 6-7): mean over queries of -log E_{y ~ Pr(y|x;w)} G(y) over the sample,
    G = AUC, AP or NDCG@k (``gain``). Not convex: train it from several starts."""
    settings = _settings(sample_size, walk_length, restart_states, restart_skew, seed, restart_spread)
    return _sampled("exp_gain", scores, labels, mask, rel_threshold, gain, k, normalize, settings)


def l3(scores, labels, mask, *, gain: str = GAIN, k: int = K, rel_threshold: float = REL_THRESHOLD,
       normalize: bool = False, sample_size: int = SAMPLER.sample_size, walk_length: int = SAMPLER.walk_length,
       restart_states: int = SAMPLER.restart_states, restart_skew: float = SAMPLER.restart_skew,
       seed: int = SAMPLER.seed, restart_spread: str = SAMPLER.restart_spread):
    """L3 (Eq. 12): MLE + E_y[Delta(y)] (Eq. 11) over the sample. Not convex."""
    settings = _settings(sample_size, walk_length, restart_states, restart_skew, seed, restart_spread)
    return _sampled("l3", scores, labels, mask, rel_threshold, gain, k, normalize, settings)


def convex_loss(scores, labels, mask, *, gain: str = GAIN, k: int = K, rel_threshold: float = REL_THRESHOLD,
                normalize: bool = False, sample_size: int = SAMPLER.sample_size, walk_length: int = SAMPLER.walk_length,
                restart_states: int = SAMPLER.restart_states, restart_skew: float = SAMPLER.restart_skew,
                seed: int = SAMPLER.seed, restart_spread: str = SAMPLER.restart_spread):
    """ConvexLoss (Eq. 14): mean over queries of log sum_y exp(w'phi(y) - w'phi(y*) + Delta(y))
    over the sample; convex in the scores, an upper bound of L1 + L2."""
    settings = _settings(sample_size, walk_length, restart_states, restart_skew, seed, restart_spread)
    return _sampled("convex_loss", scores, labels, mask, rel_threshold, gain, k, normalize, settings)


def exp_gain_auc(scores, labels, mask, *, rel_threshold: float = REL_THRESHOLD, normalize: bool = False):
    """ExpGain with the AUC gain, exactly, over every y in {-1, +1}^(n+ n-) (Section 2.3). With
    h_gb(y) = exp(y d_gb / c), d_gb = s_g - s_b, the identities of Figure 1 factor both sums:
    Z = prod_gb (h_gb(-1) + h_gb(1)) and sum_y #1_y prod h = sum_gb h_gb(1) prod_{other} (h(-1) + h(1)),
    so the expected AUC is the mean over pairs of h(1) / (h(-1) + h(1)) = sigmoid(2 d_gb / c).
    Loss per query: -log of that mean; O(n+ n-), pairs in bounded blocks."""
    s, y, mask = clean(scores, labels, mask)
    good, bad, P, N, active = _goods(y, mask, rel_threshold)
    c = np.where(active, P * N, 1).astype(np.float64) if normalize else np.ones(len(P))
    value, grad = 0.0, np.zeros(s.shape)
    weights = query_weights(active)
    # goods x bads of sigmoid(2 d / c), over blocks of queries of bounded size
    for q, w in query_chunks(mask, np.flatnonzero(active), PAIR_BLOCK_ELEMENTS, lambda widths: widths ** 2):
        sc, gq, bq = s[q, :w], good[q, :w], bad[q, :w]
        scale = (2.0 / c[q])[:, None, None]
        pair = gq[:, :, None] & bq[:, None, :]
        sig = np.where(pair, expit(scale * (sc[:, :, None] - sc[:, None, :])), 0.0)
        mean = sig.sum(axis=(1, 2)) / (P[q] * N[q])
        value -= float((np.log(mean) * weights[q]).sum())
        # d(-log mean)/d d_gb = -sig (1 - sig) (2/c) / (mean n+ n-)
        slope = -sig * (1.0 - sig) * scale / (mean * P[q] * N[q])[:, None, None] * weights[q][:, None, None]
        grad[q, :w] += slope.sum(axis=2) - slope.sum(axis=1)
    return value, grad
