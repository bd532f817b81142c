"""The swap sampler of Dubey et al. (2009), Section 4 and Figure 2: a sample of rankings y per
query, drawn once before optimisation so that L-BFGS sees one fixed objective.

A ranking is y in {-1, +1}^(n+ x n-), y_gb = +1 when good g is before bad b. It comes from a
total order iff the sets of bads the goods beat are nested (a Ferrers relation), and then it
is determined by its counts

    beats[g]  = number of bads good g beats (the paper's n_g),
    beaten[b] = number of goods that beat bad b (the paper's n_b is n+ - beaten[b]):

the goods that beat b are the beaten[b] goods with the most beats (whole tie classes), so

    y_gb = +1  iff  #{g': beats[g'] >= beats[g]} <= beaten[b],

and flipping y_gb keeps a total order iff g is among the weakest goods that beat b (+1 -> -1:
``#{g': beats[g'] >= beats[g]} == beaten[b]``) or among the strongest that do not (-1 -> +1:
``#{g': beats[g'] > beats[g]} == beaten[b]``). The walks therefore keep only the counts: a
proposal costs O(n+), and no n+ x n- matrix is ever built.

A walk starts at a restart state and makes ``walk_length`` swaps (Figure 2: draw a pair
uniformly, flip it with probability theta, reject a flip that is not a total order, repeat
until one is accepted); every state y0..yT is collected, walks are added until a query has
``sample_size`` states. Restart states (Section 4.1) put the goods in one block after j bads
(the j bads above the goods chosen at random), for ``restart_states`` values of j from 0 (the
best ranking, Delta = 0) to n- (the worst, "all bad documents followed by all good
documents"); a walk picks state r with probability proportional to exp(k Delta_r), k =
``restart_skew`` (k < 0 favours good states; with two states, k = -ln 9 ~ -2.2 picks the best
one 90% of the time: Figure 5).

Where the j between 0 and n- lie (``restart_spread``):

* ``"delta"`` (default): the restart Deltas, of the gain the sample is drawn for, evenly
  spread over [0, Delta(n-)], each state the block with the fewest bads above the goods that
  reaches its Delta. The paper asks for exactly this -- "Choose restart states to span a
  variety of Deltas", "we also created a bigger set of restart rankings with a variety of
  Deltas" (4.1), "we handcrafted a number of restarts with diverse Delta values in [0, 1]"
  (5.3.2), "three restarts: Delta = 0, Delta ~ 0.5, Delta = 1" (5.3.3) -- but does not say
  how the rankings were built.
* ``"bads"``: j evenly spread over 0..n- (the literal reading of a block family, kept as an
  option). It spreads Delta_AUC (= j / n-) evenly, but NDCG@10 reaches Delta = 1 at j = 10,
  so on a query with n- >= 10 (restart_states - 1) every state but the best has Delta_NDCG = 1.

With two restart states (Figure 3's setup: "we used two restart states", skewed 0.9 to the
best) both spreads give {best, worst}, and on OHSUMED-like queries the gain has nothing to act
on: a swap keeps a total order only where a good and a bad are adjacent, so 10 swaps from the
best ranking only move the good/bad boundary at rank n+ by at most 10 pairs. On LETOR 3.0
OHSUMED (fold 1, the dubey-fig3 cleaning: 60 documents and n+ = 10 (median) per query)
Delta_NDCG@10 = 0 exactly for 98% of the states near the best ranking in queries with n+ > 10
(half of them), Delta_AUC <= 10 / (n+ n-) (0.02 for the median query), and the states from the
worst ranking have Delta ~ 1 for every gain; ConvexLoss, L3 and MLE then reached one weight
vector (cosine >= 0.996). The defaults therefore follow the paper's Figure 6 setup instead of
Figure 3's: eleven restart states with Deltas spread over [0, 1] and a skew toward the best,
k = -5 (Figure 6: "k << 0 seems uniformly better"; -5 rather than -10 by OHSUMED
validation NDCG@10, five folds x three sampler seeds: MLE 0.555 / 0.551, ConvexLoss_NDCG 0.552 /
0.544 at k = -5 / -10). They restart at the best ranking 35-85% of the time (depending on the
gain and the query: 40% for AUC, 60% for NDCG@10) and otherwise mostly at rankings with a few
bads above the goods (for NDCG@10: 1, 2, 3, 5, ... bads on top, Delta 0.19, 0.38, 0.50, 0.68,
...), whose walks move bads through the top ranks, where the gains disagree.
:data:`PAPER_FIGURE3` is the literal recipe.

Random numbers are counter-based (splitmix64 of the seed, the query's row, the walk and the
proposal number), so a query's sample does not depend on the other queries, on how walks are
batched, or on the implementation: the vectorised numpy walks, the compiled numba walks and
the plain-Python reference (:func:`reference_walk`) give identical samples.
"""

from __future__ import annotations

import importlib.util
import math
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from rankstudy.evaluation.metrics import K
from rankstudy.losses.inference import paper_discount
from rankstudy.losses.padded import _splitmix64

METRICS = ("auc", "map", "ndcg")
BACKENDS = ("numpy", "numba")
SPREADS = ("delta", "bads")
_MASK64 = (1 << 64) - 1
_GAMMA = 0x9E3779B97F4A7C15
# walks x padded goods per vectorised batch: bounds the temporaries of one proposal round
WALK_BLOCK_ELEMENTS = 1 << 20


@dataclass(frozen=True)
class SamplerSettings:
    """How a query's sample is drawn; plain data, part of a loss's options."""

    sample_size: int = 100
    walk_length: int = 10
    restart_states: int = 11
    restart_skew: float = -5.0
    seed: int = 0
    restart_spread: str = "delta"

    def __post_init__(self) -> None:
        for name, low in (("sample_size", 1), ("walk_length", 0), ("restart_states", 2)):
            value = getattr(self, name)
            if int(value) != value or value < low:
                raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")
        if not math.isfinite(self.restart_skew):
            raise ValueError(f"restart_skew must be finite, got {self.restart_skew!r}")
        if self.restart_spread not in SPREADS:
            raise ValueError(f"restart_spread must be one of {', '.join(SPREADS)}, got {self.restart_spread!r}")

    @property
    def n_walks(self) -> int:
        return -(-self.sample_size // (self.walk_length + 1))


# Dubey et al.'s Figure 3 recipe, literally: two restart states (best and worst), 90% at the best
PAPER_FIGURE3 = {"restart_states": 2, "restart_skew": -2.2, "restart_spread": "bads"}


# --------------------------------------------------------------------------- random numbers

def _mix_int(x: int) -> int:
    """splitmix64 on a Python int (the reference's arithmetic, modulo 2^64)."""
    z = (x + _GAMMA) & _MASK64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK64
    return z ^ (z >> 31)


def walk_key(seed: int, query: int, walk: int) -> int:
    return _mix_int((_mix_int((_mix_int(seed & _MASK64) + query) & _MASK64) + walk) & _MASK64)


def _walk_keys(seed: int, queries: np.ndarray, walks: np.ndarray) -> np.ndarray:
    base = np.uint64(_mix_int(seed & _MASK64))
    return _splitmix64(_splitmix64(base + queries.astype(np.uint64)) + walks.astype(np.uint64))


def _uniform(keys: np.ndarray, counter: np.ndarray) -> np.ndarray:
    return (_splitmix64(keys + counter.astype(np.uint64)) >> np.uint64(11)) * (1.0 / (1 << 53))


def _uniform_int(key: int, counter: int) -> float:
    return (_mix_int((key + counter) & _MASK64) >> 11) * (1.0 / (1 << 53))


# counters of a walk's stream: 0 the restart choice, 1 the seed of the restart's bad order,
# 2a + 2 and 2a + 3 the pair and the flip of proposal a


# --------------------------------------------------------------------------- Delta of states

def deltas(beats: np.ndarray, n_good: np.ndarray, n_bad: np.ndarray, metric: str, k: int = K) -> np.ndarray:
    """Delta = 1 - gain of ranking states given by their goods' ``beats`` (..., P) (-1 at
    padding), for queries of ``n_good`` goods and ``n_bad`` bads (broadcast over the leading
    axes). Good i (by decreasing beats, from 0) is at rank r_i = i + n- - beats_(i)."""
    if metric not in METRICS:
        raise ValueError(f"unknown metric {metric!r} for Delta; valid: {', '.join(METRICS)}")
    beats = np.asarray(beats)
    P = np.asarray(n_good)[..., None]
    N = np.asarray(n_bad)[..., None]
    real = beats >= 0
    if metric == "auc":
        return 1.0 - np.where(real, beats, 0).sum(axis=-1) / (P[..., 0] * N[..., 0])
    ordered = -np.sort(-beats, axis=-1)  # decreasing, padding (-1) last
    i = np.arange(beats.shape[-1])
    rank = i + N - ordered
    if metric == "map":
        return 1.0 - np.where(real, (i + 1) / (rank + 1), 0.0).sum(axis=-1) / P[..., 0]
    width = int(np.max(P + N)) if beats.size else 1
    discount = paper_discount(width, k)
    dcg = np.where(real, discount[np.clip(rank, 0, width - 1)], 0.0).sum(axis=-1)
    ideal = np.where(i < P, discount[np.minimum(i, width - 1)], 0.0).sum(axis=-1)
    return 1.0 - dcg / ideal


def restart_table(n_good: int, n_bad: int, settings: SamplerSettings, metric: str, k: int = K):
    """The restart states of a query, as (bads above the goods j_r, cumulative choice
    probabilities) for r = 0..R-1 (R = ``restart_states``, fewer when states coincide); j_0 = 0
    and j_{R-1} = n-, the others by ``settings.restart_spread`` (module docstring)."""
    R = min(settings.restart_states, n_bad + 1)
    if settings.restart_spread == "bads":
        shift = np.unique(np.rint(np.linspace(0, n_bad, R)).astype(np.int64))
    else:
        # Delta of the block after j bads, j = 0..n-: nondecreasing in j for every metric
        j = np.arange(n_bad + 1)
        curve = deltas(np.broadcast_to((n_bad - j)[:, None], (n_bad + 1, n_good)), n_good, n_bad, metric, k)
        curve = np.maximum.accumulate(curve)  # guards the search against rounding
        targets = np.linspace(0.0, curve[-1], R)[1:-1]
        inner = np.searchsorted(curve, targets * (1 - 1e-12), side="left")
        shift = np.unique(np.concatenate([[0], inner, [n_bad]]).astype(np.int64))
    beats = (n_bad - shift)[:, None] * np.ones((1, n_good), dtype=np.int64)
    logits = settings.restart_skew * deltas(beats, n_good, n_bad, metric, k)
    weights = np.exp(logits - logits.max())
    return shift, np.cumsum(weights) / weights.sum()


# --------------------------------------------------------------------------- plain-Python reference

def reference_walk(n_good: int, n_bad: int, settings: SamplerSettings, query: int, walk: int,
                   metric: str = "auc", k: int = K) -> list[tuple[tuple[int, ...], tuple[int, ...]]]:
    """One walk, written as the paper's loop over proposals: the states (beats, beaten) y0..yT.
    The specification the vectorised walks are tested against, and the benchmark's baseline."""
    key = walk_key(settings.seed, query, walk)
    shift, cumulative = restart_table(n_good, n_bad, settings, metric, k)
    r = min(int(np.searchsorted(cumulative, _uniform_int(key, 0), side="right")), len(shift) - 1)
    j = int(shift[r])
    order_key = _mix_int((key + 1) & _MASK64)
    above = sorted(range(n_bad), key=lambda b: (_uniform_int(order_key, b), b))[:j]
    beats = [n_bad - j] * n_good
    beaten = [0 if b in above else n_good for b in range(n_bad)]
    states = [(tuple(beats), tuple(beaten))]
    attempt = 0
    while len(states) <= settings.walk_length:
        u_pair = _uniform_int(key, 2 * attempt + 2)
        u_flip = _uniform_int(key, 2 * attempt + 3)
        attempt += 1
        idx = int(u_pair * (n_good * n_bad))
        g, b = idx // n_bad, idx % n_bad
        n_g, m_b = beats[g], beaten[b]
        at_least = sum(1 for x in beats if x >= n_g)
        more = sum(1 for x in beats if x > n_g)
        plus = at_least <= m_b
        n_b = n_good - m_b  # goods that b beats
        theta = ((n_bad - n_g + n_b + 1) if plus else (n_good + n_g - n_b + 1)) / (2 + n_good + n_bad)
        if not u_flip < theta:
            continue
        if (plus and at_least != m_b) or (not plus and more != m_b):
            continue  # not a total order
        step = -1 if plus else 1
        beats[g] += step
        beaten[b] += step
        states.append((tuple(beats), tuple(beaten)))
    return states


# --------------------------------------------------------------------------- vectorised walks

class Walks(NamedTuple):
    """States of many walks: ``beats`` (W, T+1, Pmax) with -1 at padding, ``beaten`` (W, T+1,
    Nmax) with 0 at padding, for walks of queries ``query`` (W,)."""

    query: np.ndarray
    beats: np.ndarray
    beaten: np.ndarray


def _restarts(n_good, n_bad, keys, settings, metric, k, p_max, n_max):
    """Initial (beats, beaten) of every walk."""
    W = len(keys)
    beats = np.full((W, p_max), -1, dtype=np.int32)
    beaten = np.zeros((W, n_max), dtype=np.int32)
    u = _uniform(keys, np.zeros(W, dtype=np.uint64))
    order_keys = _splitmix64(keys + np.uint64(1))
    shift = np.empty(W, dtype=np.int64)
    # one restart table per distinct (n+, n-): few in practice
    pairs, which = np.unique(np.stack([n_good, n_bad], axis=1), axis=0, return_inverse=True)
    for p_index, (P, N) in enumerate(pairs):
        rows = np.flatnonzero(which.ravel() == p_index)
        table, cumulative = restart_table(int(P), int(N), settings, metric, k)
        choice = np.minimum(np.searchsorted(cumulative, u[rows], side="right"), len(table) - 1)
        shift[rows] = table[choice]
    goods = np.arange(p_max)[None, :] < n_good[:, None]
    beats[:] = np.where(goods, (n_bad - shift)[:, None], -1)
    # padded bads rank after every real one (their keys are ignored): the j real bads with the
    # smallest keys go above the goods
    bad_keys = np.where(np.arange(n_max)[None, :] < n_bad[:, None],
                        _uniform(order_keys[:, None], np.arange(n_max, dtype=np.uint64)[None, :]), 2.0)
    ranks = np.argsort(np.argsort(bad_keys, axis=1, kind="stable"), axis=1, kind="stable")
    real_bad = np.arange(n_max)[None, :] < n_bad[:, None]
    beaten[:] = np.where(real_bad & (ranks >= shift[:, None]), n_good[:, None], 0)
    return beats, beaten


def _walk_numpy(n_good, n_bad, keys, beats, beaten, walk_length):
    """Advance all walks ``walk_length`` accepted swaps, proposal rounds vectorised over the
    walks still moving; returns the states (W, T+1, .)."""
    W = len(keys)
    out_beats = np.empty((W, walk_length + 1, beats.shape[1]), dtype=np.int32)
    out_beaten = np.empty((W, walk_length + 1, beaten.shape[1]), dtype=np.int32)
    out_beats[:, 0], out_beaten[:, 0] = beats, beaten
    steps = np.zeros(W, dtype=np.int64)
    attempt = np.zeros(W, dtype=np.int64)
    live = np.flatnonzero(steps < walk_length)
    P_all, N_all = n_good.astype(np.int64), n_bad.astype(np.int64)
    while live.size:
        key, a = keys[live], attempt[live]
        P, N = P_all[live], N_all[live]
        idx = (_uniform(key, 2 * a + 2) * (P * N)).astype(np.int64)
        g, b = idx // N, idx % N
        row = beats[live]
        n_g = row[np.arange(live.size), g].astype(np.int64)
        m_b = beaten[live, b].astype(np.int64)
        at_least = (row >= n_g[:, None]).sum(axis=1)
        more = (row > n_g[:, None]).sum(axis=1)
        plus = at_least <= m_b
        n_b = P - m_b
        theta = np.where(plus, N - n_g + n_b + 1, P + n_g - n_b + 1) / (2 + P + N)
        accept = (_uniform(key, 2 * a + 3) < theta) & np.where(plus, at_least == m_b, more == m_b)
        moved = live[accept]
        step = np.where(plus[accept], -1, 1).astype(np.int32)
        beats[moved, g[accept]] += step
        beaten[moved, b[accept]] += step
        steps[moved] += 1
        out_beats[moved, steps[moved]] = beats[moved]
        out_beaten[moved, steps[moved]] = beaten[moved]
        attempt[live] += 1
        live = live[steps[live] < walk_length]
    return out_beats, out_beaten


def numba_available() -> bool:
    return importlib.util.find_spec("numba") is not None


def _walk_numba(n_good, n_bad, keys, beats, beaten, walk_length):
    # imported here: numba's import and first compilation cost start-up time that only
    # this backend's users should pay
    from rankstudy.losses.swap_walk_numba import walk

    W = len(keys)
    out_beats = np.empty((W, walk_length + 1, beats.shape[1]), dtype=np.int32)
    out_beaten = np.empty((W, walk_length + 1, beaten.shape[1]), dtype=np.int32)
    walk(n_good.astype(np.int64), n_bad.astype(np.int64), keys, beats, beaten, int(walk_length),
                out_beats, out_beaten)
    return out_beats, out_beaten


def default_backend() -> str:
    return "numba" if numba_available() else "numpy"


def draw_walks(n_good: np.ndarray, n_bad: np.ndarray, queries: np.ndarray, settings: SamplerSettings,
               metric: str = "auc", k: int = K, backend: str | None = None) -> Walks:
    """All walks of the given queries (their rows ``queries``, with ``n_good`` goods and
    ``n_bad`` bads each, both >= 1): ``settings.n_walks`` walks per query, in batches of
    queries with similar n+ so that padding stays small."""
    backend = backend or default_backend()
    if backend not in BACKENDS:
        raise ValueError(f"unknown sampler backend {backend!r}; valid: {', '.join(BACKENDS)}")
    n_good, n_bad, queries = (np.asarray(a, dtype=np.int64) for a in (n_good, n_bad, queries))
    if np.any(n_good < 1) or np.any(n_bad < 1):
        raise ValueError("every sampled query needs a good and a bad document")
    order = np.argsort(n_good, kind="stable")
    n_walks = settings.n_walks
    T = settings.walk_length
    parts: list[Walks] = []
    start = 0
    while start < len(order):
        # as many queries as fit the budget at the batch's largest n+
        cost = np.arange(1, len(order) - start + 1) * n_walks * n_good[order[start:]]
        stop = start + max(1, int(np.searchsorted(cost, WALK_BLOCK_ELEMENTS, side="right")))
        chosen = order[start:stop]
        start = stop
        P = np.repeat(n_good[chosen], n_walks)
        N = np.repeat(n_bad[chosen], n_walks)
        query = np.repeat(queries[chosen], n_walks)
        walk = np.tile(np.arange(n_walks), len(chosen))
        keys = _walk_keys(settings.seed, query, walk)
        beats, beaten = _restarts(P, N, keys, settings, metric, k, int(P.max()), int(N.max()))
        run = _walk_numba if backend == "numba" else _walk_numpy
        out_beats, out_beaten = run(P, N, keys, beats, beaten, T)
        parts.append(Walks(query, out_beats, out_beaten))
    p_max = max((w.beats.shape[2] for w in parts), default=1)
    n_max = max((w.beaten.shape[2] for w in parts), default=1)

    def widen(a, width, fill):
        return np.pad(a, ((0, 0), (0, 0), (0, width - a.shape[2])), constant_values=fill)

    if not parts:
        empty = np.zeros((0, T + 1, 1), dtype=np.int32)
        return Walks(np.zeros(0, dtype=np.int64), empty - 1, empty)
    return Walks(np.concatenate([w.query for w in parts]),
                 np.concatenate([widen(w.beats, p_max, -1) for w in parts]),
                 np.concatenate([widen(w.beaten, n_max, 0) for w in parts]))
