"""JAX in one place, for the two modules that run it (the attention scorer and NeuralNDCG's DCG):

* :func:`load_jax` imports JAX on first use (about a second: a job that never runs JAX never
  pays it) and starts its backend, so a ``JAX_PLATFORMS`` naming a backend this machine lacks
  (``cuda`` without a GPU, which JAX ends in a bare AssertionError) is one line naming the variable;
* :func:`float64`: JAX computes in float64 for the duration of a ``with`` block, every entry into
  JAX inside one, and the process-wide default (float32) is left alone, so another library's JAX
  in the same process is not changed under it;
* :func:`bucket`: the one padding scheme for the shapes JAX compiles: a padded size is 2^n or
  1.5 2^n (at most a third padding), so a handful of compiled shapes serve every call (compiling
  one takes a second or two).

Nothing here imports JAX until :func:`load_jax` or :func:`float64` is called.
"""

from __future__ import annotations

import contextlib
import importlib
import os
from functools import cache


class JaxPlatformError(RuntimeError):
    """``JAX_PLATFORMS`` names a backend JAX cannot start on this machine."""


@cache
def load_jax():
    """The ``jax`` module, its backend started (once per process)."""
    jax = importlib.import_module("jax")
    try:
        jax.devices()
    except Exception as exc:  # noqa: BLE001 - JAX ends a missing backend in a bare AssertionError
        platforms = os.environ.get("JAX_PLATFORMS")
        if not platforms:
            raise
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise JaxPlatformError(
            f"JAX_PLATFORMS={platforms!r}: JAX cannot start that backend on this machine ({reason}); "
            f"unset JAX_PLATFORMS (JAX picks a GPU when it has one) or set JAX_PLATFORMS=cpu") from None
    return jax


def float64():
    """A context in which JAX computes in float64 (the process-wide setting unchanged)."""
    jax = load_jax()
    if callable(getattr(jax, "enable_x64", None)):
        return jax.enable_x64(True)
    try:
        from jax.experimental import enable_x64  # jax < 0.5
    except ImportError:  # pragma: no cover
        return contextlib.nullcontext()
    return enable_x64()


def bucket(n: int, smallest: int = 1) -> int:
    """The smallest of ``smallest`` (a power of two), 1.5 times it, twice it, ... that holds ``n``
    (sizes 1, 2, 3, 4, 6, 8, 12, ... from 1; 8, 12, 16, 24, ... from 8)."""
    size = smallest
    while size < n:
        # from a power of two up by half, else up to the next power of two
        size = max(size + 1, size * 3 // 2) if size & (size - 1) == 0 else size // 3 * 4
    return size
