"""A toy ranker for the tuning tests: one weight per feature scaled by ``rate``, fitted in
milliseconds, that diverges (NaN scores) above ``rate`` 10 and can be made slow (``sleep``)
so a worker can be killed mid-trial."""

from __future__ import annotations

import time

import numpy as np

from rankstudy.rankers.base import Ranker
from rankstudy.util.params import LogUniform, Param, Real
from rankercheck import W_TRUE


class ToyRanker(Ranker):
    kind = "toy"
    parameters = {"rate": Param(Real(0, low_open=True), 1.0, space=LogUniform(1e-3, 100.0)),
                  "noise": Param(Real(0), 0.0), "sleep": Param(Real(0), 0.0), "seed": Param(Real(), 0)}

    def fit(self, train, vali=None):
        time.sleep(self.sleep)
        rng = np.random.default_rng(int(self.seed))
        # the further rate is from 1, the noisier the weights: the best trial has rate near 1
        self.w_ = W_TRUE * self.rate + abs(np.log(self.rate)) * rng.normal(size=len(W_TRUE)) + self.noise
        self.objective_trace_ = {"start": 1.0, "final": float("nan") if self.rate > 10 else 0.5}
        return self

    def predict(self, data):
        return np.full(len(data.y), np.nan) if self.rate > 10 else data.X @ self.w_

    def _get_state(self):
        return {"w": self.w_.tolist()}

    def _set_state(self, state):
        self.w_ = np.array(state["w"])


# a one-fold synthetic study tuning LightGBM's LambdaMART with two workers (the e2e and SLURM tests)
TUNED = {
    "study": "tuned", "folds": [1],
    "synthetic": {"n_queries": 120, "n_features": 20},
    "features": {"normalization": "zscore", "first_order": True, "rho": []},
    "methods": {"lambdamart": {"kind": "lambdamart", "params": {"n_estimators": 120, "early_stopping_rounds": 200}}},
    "tune": {"trials": 6, "workers": 2, "sampler": "tpe"},
    "report": {"baseline": "lambdamart", "metrics": ["ndcg@10"], "n_resamples": 100, "alpha": 0.05},
}


def register() -> None:
    from rankstudy.rankers.registry import RANKERS

    RANKERS["toy"] = ToyRanker
