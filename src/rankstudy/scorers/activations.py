"""Elementwise activations with their derivatives, for the scorers that write their own vjp:
``activate(name, z) -> (act(z), act'(z))``."""

from __future__ import annotations

import numpy as np

LEAK = 0.01  # leaky_relu's slope below 0 (torch's default)
ACTIVATIONS = ("relu", "leaky_relu", "tanh", "sigmoid")


def activate(name: str, z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """act(z) and act'(z) (at a ReLU's kink, 0: the subgradient torch takes)."""
    if name == "relu":
        return np.maximum(z, 0.0), (z > 0).astype(z.dtype)
    if name == "leaky_relu":
        positive = z > 0
        return np.where(positive, z, LEAK * z), np.where(positive, 1.0, LEAK)
    if name == "tanh":
        h = np.tanh(z)
        return h, 1.0 - h * h
    if name == "sigmoid":
        h = 0.5 * (1.0 + np.tanh(0.5 * z))  # overflow-free logistic
        return h, h * (1.0 - h)
    raise ValueError(f"unknown activation {name!r}; valid activations: {', '.join(ACTIVATIONS)}")
