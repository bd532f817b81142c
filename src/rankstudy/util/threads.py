"""How many threads a job's numerical libraries may use.

A Snakemake job is granted ``threads`` cores; :func:`use_job_threads` gives exactly that many to
BLAS and OpenMP (through threadpoolctl, which works after the libraries are loaded) and to
LightGBM (which takes ``num_threads`` per call: :func:`job_threads`). So a lone LambdaMART job
declared with two threads uses both cores, and single-threaded jobs running side by side do not
oversubscribe them with BLAS's own threads. Outside a job the count is 1 unless set, so library
use and tests stay reproducible and polite on shared machines."""

from __future__ import annotations

import os

_threads = 1
_limits = None  # the threadpoolctl limiter, kept alive while the limits apply


def use_job_threads(n: int) -> int:
    """Let BLAS, OpenMP and LightGBM use ``n`` threads from now on in this process."""
    from threadpoolctl import threadpool_limits  # ~0.1 s import: only where threads are set

    global _threads, _limits
    _threads = max(1, int(n))
    # threadpoolctl reaches the libraries loaded so far; the environment, those loaded later
    # (an OpenBLAS left at the core count spins its idle threads: L-BFGS-B's small products
    # ran 37x slower beside a busy neighbour)
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = str(_threads)
    # OpenMP's idle threads sleep instead of spinning (LightGBM's 100 rounds took 2-125 s beside a
    # busy neighbour when they spun, 0.8-2.9 s when they slept); read when the runtime loads, which
    # in a job is after this (LightGBM is imported when a booster is fitted)
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    _limits = threadpool_limits(limits=_threads)
    return _threads


def job_threads() -> int:
    return _threads
