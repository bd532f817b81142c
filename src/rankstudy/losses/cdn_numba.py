"""The fully connected CDN of one query, compiled (numba, ``parallel=True`` over blocks of rows).

For E edges with margins r, u_e = -w1 r_e and v_e = -w2 r_e, the loss is the sum over the
E (E - 1) ordered pairs e != e' of log(1 + a_e + b_e') with a = exp(u), b = exp(v): the
exponentials are per edge, so a clique costs one add, one division and one product, and a log
is taken only every ``k`` cliques, of the product of their 1 + a_e + b_e' (k chosen per query so
that the product cannot overflow). With q_ee' = 1 / (1 + a_e + b_e'), the derivatives are
row and column sums: sum_e' p1 = a_e sum_e' q_ee' and sum_e p2 = b_e' sum_e q_ee'. The numpy
form (:func:`rankstudy.losses.cdn._query_loss`, blocks of rows) is the reference it is tested
against; it evaluates exp and log once per clique.

When a margin term is too large for the product (1 + a + b > 2^1000, i.e. max(u, v) > ~690),
the query takes a slower path, also compiled, that shifts every clique by max(0, u, v) as the
numpy form does. Accuracy: the log of a product of k factors has the rounding of a sum of k
logs; a term near 0 (a, b tiny) is then known to ~1e-16 absolutely, as in the numpy form,
which takes log(1 + ...) too (not log1p).

Threads: the job's (:func:`rankstudy.util.threads.job_threads`, 1 outside a pipeline job), through
numba's ``workqueue`` threading layer unless NUMBA_THREADING_LAYER says otherwise: with OpenMP
(libgomp, whose waiting threads spin) two threads took 180 ms instead of 22 ms for one on a
3,168-edge query while other processes kept both cores busy; with workqueue, 23-28 ms. Queries
of fewer than 2^18 cliques run serially (a parallel launch cost ~1 ms). The blocks of rows are
fixed by E and the thread count, so a result does not depend on scheduling; it differs with the
thread count only by rounding (sums in another order). ``error_model="numpy"`` (IEEE division,
no ZeroDivisionError check) lets LLVM vectorise the division; the divisors are >= 1. Kept at
module level so numba's on-disk cache is found by later processes; imported only when the full
topology is evaluated, since importing numba costs start-up time.
"""

from __future__ import annotations

import math
import os

import numba
import numpy as np

from rankstudy.util.threads import job_threads

if "NUMBA_THREADING_LAYER" not in os.environ:  # takes effect unless a parallel kernel already ran
    numba.config.THREADING_LAYER = "workqueue"

_LOG2_LIMIT = 1000.0  # a product of factors stays below 2^1000 (doubles reach 2^1024)
_PARALLEL_CLIQUES = 1 << 18  # below this a parallel launch costs more than it saves


@numba.njit(cache=True, nogil=True, fastmath={"reassoc", "contract"}, error_model="numpy")
def _row(c, b, k, colsum):
    """One row e: (sum_e' log(c + b_e'), sum_e' 1/(c + b_e')) over every e' (the diagonal
    included), adding 1/(c + b_e') to ``colsum``. A log per ``k`` factors."""
    E = b.shape[0]
    value = 0.0
    rowsum = 0.0
    for start in range(0, E, k):
        stop = min(E, start + k)
        product = 1.0
        for j in range(start, stop):
            t = c + b[j]
            q = 1.0 / t
            rowsum += q
            colsum[j] += q
            product *= t
        value += math.log(product)
    return value, rowsum


@numba.njit(cache=True, nogil=True, error_model="numpy")
def _fast_rows(a, b, k, first, last, colsum, rows):
    """Rows first..last-1 of the sum over e != e' of log(1 + a_e + b_e'): returns their sum,
    writes sum_e' p1 to ``rows`` and adds each column's sum_e q to ``colsum``."""
    total = 0.0
    for i in range(first, last):
        c = 1.0 + a[i]
        value, rowsum = _row(c, b, k, colsum)
        t = c + b[i]  # the diagonal (e, e) is not a clique: taken out again
        colsum[i] -= 1.0 / t
        rows[i] = a[i] * (rowsum - 1.0 / t)
        total += value - math.log(t)
    return total


@numba.njit(cache=True, nogil=True, error_model="numpy")
def _shifted_rows(u, v, first, last, colsum, rows):
    """The same for margins too large for products: each clique shifted by m = max(0, u_e,
    v_e'), log(1 + e^u + e^v) = m + log(e^-m + e^(u-m) + e^(v-m)), exponentials per clique;
    adds sum_e p2 (not q) to ``colsum``."""
    E = u.shape[0]
    total = 0.0
    for i in range(first, last):
        p1 = 0.0
        for j in range(E):
            if j == i:
                continue
            m = max(0.0, u[i], v[j])
            e1, e2 = math.exp(u[i] - m), math.exp(v[j] - m)
            t = math.exp(-m) + e1 + e2
            total += m + math.log(t)
            p1 += e1 / t
            colsum[j] += e2 / t
        rows[i] = p1
    return total


@numba.njit(cache=True, nogil=True, parallel=True, error_model="numpy")
def _blocks(x, y, k, n_blocks, shifted):
    """Blocks of rows in parallel, each with its own column sums: (value, row sums, column sums)."""
    E = x.shape[0]
    values = np.zeros(n_blocks)
    cols = np.zeros((n_blocks, E))
    rows = np.zeros(E)
    for blk in numba.prange(n_blocks):
        first, last = blk * E // n_blocks, (blk + 1) * E // n_blocks
        if shifted:
            values[blk] = _shifted_rows(x, y, first, last, cols[blk], rows)
        else:
            values[blk] = _fast_rows(x, y, k, first, last, cols[blk], rows)
    colsum = np.zeros(E)
    for blk in range(n_blocks):
        colsum += cols[blk]
    return values.sum(), rows, colsum


@numba.njit(cache=True, nogil=True, error_model="numpy")
def _serial(x, y, k, shifted):
    """The same in one block, without a parallel launch (for short queries)."""
    E = x.shape[0]
    colsum = np.zeros(E)
    rows = np.zeros(E)
    if shifted:
        value = _shifted_rows(x, y, 0, E, colsum, rows)
    else:
        value = _fast_rows(x, y, k, 0, E, colsum, rows)
    return value, rows, colsum


def full_cdn_query(r: np.ndarray, w1: float, w2: float, threads: int | None = None):
    """-log F of one query's fully connected CDN over its edge margins ``r``, and its
    gradients: (value, d/dr, d/dw1, d/dw2)."""
    r = np.ascontiguousarray(r, dtype=np.float64)
    E = len(r)
    if E < 2:
        return 0.0, np.zeros(E), 0.0, 0.0
    n_threads = max(1, min(int(threads or job_threads()), numba.config.NUMBA_NUM_THREADS))
    u, v = -w1 * r, -w2 * r
    log2_factor = (max(0.0, float(u.max())) + max(0.0, float(v.max())) + 1.0) / math.log(2.0) + 1.0
    shifted = log2_factor >= _LOG2_LIMIT
    k = 1 if shifted else int(max(1, min(64, _LOG2_LIMIT // log2_factor)))
    x, y = (u, v) if shifted else (np.exp(u), np.exp(v))
    if n_threads == 1 or E * E < _PARALLEL_CLIQUES:
        value, p1, colsum = _serial(x, y, k, shifted)
    else:
        numba.set_num_threads(n_threads)
        # a few blocks per thread even out the load; each block holds one column-sum row of E
        value, p1, colsum = _blocks(x, y, k, min(E, 4 * n_threads), shifted)
    p2 = colsum if shifted else y * colsum  # sum_e p2 = b_e' sum_e q in the product form
    grad_r = -w1 * p1 - w2 * p2
    return float(value), grad_r, -float(r @ p1), -float(r @ p2)
