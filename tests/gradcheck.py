"""Central finite differences, shared by the gradient tests of every loss family."""

from __future__ import annotations

import numpy as np


def finite_difference(fn, s, h=1e-6):
    """Numerical gradient of the scalar ``fn`` at ``s``, one coordinate at a time."""
    grad = np.zeros_like(s)
    for idx in np.ndindex(*s.shape):
        step = np.zeros_like(s)
        step[idx] = h
        grad[idx] = (fn(s + step) - fn(s - step)) / (2 * h)
    return grad


def relative_error(a, b):
    return np.linalg.norm(a - b) / max(np.linalg.norm(a) + np.linalg.norm(b), 1e-300)
