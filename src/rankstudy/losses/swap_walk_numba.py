"""The swap sampler's walks as one compiled loop (numba): the same arithmetic, random numbers
and acceptance rule as :func:`rankstudy.losses.swap_sampler._walk_numpy`, one walk after another.
Kept at module level (not in a closure) so that numba's on-disk cache is found by later
processes; imported only when this backend is used, since importing numba costs start-up time."""

from __future__ import annotations

import numba
import numpy as np

_U64 = numba.uint64


@numba.njit(cache=True, nogil=True)
def _mix(x):
    z = x + _U64(0x9E3779B97F4A7C15)
    z = (z ^ (z >> _U64(30))) * _U64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> _U64(27))) * _U64(0x94D049BB133111EB)
    return z ^ (z >> _U64(31))


@numba.njit(cache=True, nogil=True)
def _uniform(key, counter):
    return np.float64(_mix(key + _U64(counter)) >> _U64(11)) * (1.0 / 9007199254740992.0)


@numba.njit(cache=True, nogil=True)
def walk(n_good, n_bad, keys, beats, beaten, walk_length, out_beats, out_beaten):
    """Advance every walk ``walk_length`` accepted swaps, writing states 0..T to the outputs."""
    for w in range(keys.shape[0]):
        P, N, key = np.int64(n_good[w]), np.int64(n_bad[w]), keys[w]
        out_beats[w, 0, :] = beats[w]
        out_beaten[w, 0, :] = beaten[w]
        steps, attempt = 0, 0
        while steps < walk_length:
            idx = np.int64(_uniform(key, 2 * attempt + 2) * (P * N))
            u_flip = _uniform(key, 2 * attempt + 3)
            attempt += 1
            g, b = idx // N, idx % N
            n_g, m_b = np.int64(beats[w, g]), np.int64(beaten[w, b])
            at_least, more = 0, 0
            for i in range(P):
                if beats[w, i] >= n_g:
                    at_least += 1
                    if beats[w, i] > n_g:
                        more += 1
            plus = at_least <= m_b
            n_b = P - m_b
            if plus:
                theta = (N - n_g + n_b + 1) / (2 + P + N)
            else:
                theta = (P + n_g - n_b + 1) / (2 + P + N)
            if not u_flip < theta:
                continue
            if (plus and at_least != m_b) or ((not plus) and more != m_b):
                continue  # not a total order
            step = -1 if plus else 1
            beats[w, g] += step
            beaten[w, b] += step
            steps += 1
            out_beats[w, steps, :] = beats[w]
            out_beaten[w, steps, :] = beaten[w]
