"""DASALC's input tricks for the network scorers (Qin et al., "Are neural rankers still
outperformed by gradient boosted decision trees?", ICLR 2021), one place for the MLP and the
attention scorer:

* ``input_transform``: ``"log1p"`` replaces each feature x by sign(x) log(1 + |x|) before the
  network sees it, in training and prediction alike (LETOR features span orders of magnitude; the
  transform is odd and monotone, so the order within a feature is kept); ``"none"`` leaves them;
* ``input_noise``: the standard deviation of Gaussian noise added to the (transformed) features of
  each training step only (data augmentation), drawn from the training generator (the solver's,
  seeded by the ranker's ``seed``); 0 draws nothing, so the generator's stream, and the model, are
  as without it. Prediction and the objective the history records never see noise.

A scorer applies the transform to the rows it runs on (a training batch, a chunk of a split it
scores), and the noise in its training forward pass, before any normalisation of its own: the
features stay as bound (float32 with ``features.dtype: float32``), with no float64 copy of a split.
"""

from __future__ import annotations

import numpy as np

from rankstudy.util.params import Choice, Choices, Param, Real, Uniform

INPUT_TRANSFORMS = ("none", "log1p")

PARAMETERS = {
    "input_transform": Param(Choice(INPUT_TRANSFORMS, "input_transform"), "none", space=Choices(list(INPUT_TRANSFORMS)),
                             help="log1p: sign(x) log(1 + |x|) of every feature, in training and prediction"),
    "input_noise": Param(Real(0), 0.0, space=Uniform(0.0, 0.3),
                         help="std of Gaussian noise on the training features (0: none)"),
}


def transform(X: np.ndarray, name: str) -> np.ndarray:
    """The rows ``X`` as the network sees them (float64)."""
    X = np.asarray(X, dtype=np.float64)
    if name == "log1p":
        return np.sign(X) * np.log1p(np.abs(X))
    return X


def add_noise(X: np.ndarray, std: float, rng: np.random.Generator | None) -> np.ndarray:
    """``X`` plus N(0, std^2) noise from ``rng`` (training); ``X`` itself without a generator
    (prediction) or with ``std`` 0 (nothing drawn)."""
    if rng is None or not std:
        return X
    return X + rng.normal(0.0, std, X.shape)
