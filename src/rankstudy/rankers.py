"""Rankers: small estimator objects with fit/predict, parameters as plain data.

* :class:`LinearRanker` -- score = w'x (or the quadratic functional w'x + x'Cx of
  :mod:`rankstudy.functionals`), trained with L-BFGS-B on any loss of
  :mod:`rankstudy.losses` (optionally over label-tie groups, :mod:`rankstudy.groups`)
  plus a Gaussian prior (l2/2 ||w||^2).
* :class:`LambdaMART` -- LightGBM's lambdarank objective, early stopping on
  validation NDCG@10.

Both save to one JSON file (``{"kind", "params", "state", "history"}``) that
:func:`load_ranker` turns back into the right class.
"""

from __future__ import annotations

import inspect
import json
import os
from functools import partial
from typing import Any

import numpy as np
from scipy.optimize import minimize

from rankstudy import atomic
from rankstudy.data import RankData, padded_layout
from rankstudy.functionals import FUNCTIONALS, quadratic_scores, quadratic_vjp
from rankstudy.pairs import check_pairs
from rankstudy.groups import check_aggregate, grouped_loss
from rankstudy.loss_registry import get_loss

SAVE_FORMAT = "rankstudy.ranker"
SAVE_VERSION = 1


class NotFittedError(RuntimeError):
    pass


class Ranker:
    """Base class. Subclasses set ``kind``, take their parameters as keyword arguments of
    ``__init__`` (stored under the same names), and implement ``fit``, ``predict``,
    ``_get_state`` and ``_set_state`` (JSON-able fitted state)."""

    kind: str = ""

    def __init__(self) -> None:
        self.history_: list[dict] = []

    def fit(self, train: RankData, vali: RankData | None = None) -> "Ranker":
        raise NotImplementedError

    def predict(self, data: RankData) -> np.ndarray:
        raise NotImplementedError

    @classmethod
    def param_names(cls) -> list[str]:
        return [p for p in inspect.signature(cls.__init__).parameters if p != "self"]

    def get_params(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self.param_names()}

    def _get_state(self) -> dict:
        raise NotImplementedError

    def _set_state(self, state: dict) -> None:
        raise NotImplementedError

    def save(self, path: str | os.PathLike) -> None:
        """Write params, fitted state and history as one JSON file (atomically: temp + rename)."""
        doc = {
            "format": SAVE_FORMAT, "version": SAVE_VERSION, "kind": self.kind,
            "params": self.get_params(), "state": self._get_state(), "history": self.history_,
        }
        # json writes floats as shortest round-trip reprs, so weights reload exactly
        atomic.write_text(path, json.dumps(doc))

    @classmethod
    def load(cls, path: str | os.PathLike) -> "Ranker":
        """Load a saved ranker; called on the base class it dispatches on the saved kind."""
        with open(path) as f:
            doc = json.load(f)
        if doc.get("format") != SAVE_FORMAT:
            raise ValueError(f"{path}: not a saved rankstudy ranker")
        klass = _ranker_class(doc["kind"])
        if not issubclass(klass, cls):
            raise ValueError(f"{path} holds a {doc['kind']!r} ranker, not a {cls.__name__}")
        ranker = klass(**doc["params"])
        ranker._set_state(doc["state"])
        ranker.history_ = doc["history"]
        return ranker

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items())
        return f"{type(self).__name__}({args})"


# --------------------------------------------------------------------------- linear

class LinearObjective:
    """f(theta) = loss(pad(X w + b)) + l2/2 ||w||^2 and its gradient, for L-BFGS.

    ``theta`` is ``w`` or ``[w, b]`` when ``fit_intercept`` (the bias is not penalised).
    The padding layout, padded labels and mask are built once here, not per call.
    Subclasses change the functional by overriding ``n_weights``, ``scores`` and ``weight_grad``.
    """

    def __init__(self, data: RankData, loss, l2: float, fit_intercept: bool) -> None:
        self.X = data.X
        self.loss = loss
        self.l2 = float(l2)
        self.fit_intercept = fit_intercept
        # the same layout as data.pad, built once
        self.shape, self.flat, self.mask, self.labels = padded_layout(data.offsets, data.y)
        self.last_theta: np.ndarray | None = None
        self.last_loss = np.nan

    @property
    def n_weights(self) -> int:
        """Number of penalised parameters (theta[:n_weights]); the bias, if any, follows them."""
        return self.X.shape[1]

    @property
    def n_params(self) -> int:
        return self.n_weights + int(self.fit_intercept)

    def functional_scores(self, weights: np.ndarray) -> np.ndarray:
        return self.X @ weights

    def weight_grad(self, grad_scores: np.ndarray) -> np.ndarray:
        """d sum_n grad_scores_n f_n / d weights."""
        return self.X.T @ grad_scores

    def scores(self, theta: np.ndarray) -> np.ndarray:
        k = self.n_weights
        s = self.functional_scores(theta[:k])
        return s + theta[k] if self.fit_intercept else s

    def data_loss(self, theta: np.ndarray) -> float:
        """Loss term alone (no penalty); reuses the last evaluation when theta matches."""
        if self.last_theta is not None and np.array_equal(theta, self.last_theta):
            return self.last_loss
        self(theta, need_grad=False)
        return self.last_loss

    def _penalty(self, theta: np.ndarray) -> float:
        w = theta[: self.n_weights]
        return 0.5 * self.l2 * float(w @ w)

    def __call__(self, theta: np.ndarray, need_grad: bool = True):
        theta = np.asarray(theta, dtype=np.float64)
        padded = np.zeros(self.shape)
        padded.flat[self.flat] = self.scores(theta)
        value, grad_padded = self.loss(padded, self.labels, self.mask)
        self.last_theta, self.last_loss = theta.copy(), value
        objective = value + self._penalty(theta)
        if not need_grad:
            return objective, None
        grad_scores = grad_padded.ravel()[self.flat]
        k = self.n_weights
        grad = np.empty(self.n_params)
        grad[:k] = self.weight_grad(grad_scores) + self.l2 * theta[:k]
        if self.fit_intercept:
            grad[k] = grad_scores.sum()
        return objective, grad


def minimize_lbfgs(train_obj, theta0: np.ndarray, vali_obj=None, *, tol: float, max_iter: int):
    """SciPy L-BFGS-B on an objective ``theta -> (value, grad)`` that also has ``data_loss``;
    returns (scipy result, training curve: one dict per iteration, step 0 = the start)."""
    history: list[dict] = []

    def record(theta: np.ndarray, objective: float) -> None:
        entry = {"step": len(history), "objective": float(objective),
                 "train_loss": float(train_obj.data_loss(theta))}
        if vali_obj is not None:
            entry["vali_loss"] = float(vali_obj.data_loss(theta))
        history.append(entry)

    record(theta0, train_obj(theta0, need_grad=False)[0])
    # SciPy hands the callback an OptimizeResult only if its parameter has exactly this name
    result = minimize(train_obj, theta0, jac=True, method="L-BFGS-B", tol=tol,
                      options={"maxiter": int(max_iter)},
                      callback=lambda intermediate_result: record(intermediate_result.x, intermediate_result.fun))
    return result, history


class QuadraticObjective(LinearObjective):
    """:class:`LinearObjective` for the quadratic functional w'x + sum_k c_k x_{i_k} x_{j_k}
    (Tran et al. 2011, Eq. 4): ``theta = [w, c]`` (+ bias), l2/2 ||[w, c]||^2. Scores and
    gradients are accumulated over row chunks, never forming the n x k product matrix."""

    def __init__(self, data: RankData, loss, l2: float, fit_intercept: bool, pairs,
                 chunk_rows: int = 8192) -> None:
        super().__init__(data, loss, l2, fit_intercept)
        self.pairs = check_pairs(pairs, data.n_features)
        self.chunk_rows = int(chunk_rows)

    @property
    def n_weights(self) -> int:
        return self.X.shape[1] + len(self.pairs)

    def functional_scores(self, weights: np.ndarray) -> np.ndarray:
        m = self.X.shape[1]
        return quadratic_scores(self.X, self.pairs, weights[:m], weights[m:], self.chunk_rows)

    def weight_grad(self, grad_scores: np.ndarray) -> np.ndarray:
        return np.concatenate(quadratic_vjp(self.X, self.pairs, grad_scores, self.chunk_rows))


# regression losses compare scores with labels, so they need a bias; ranking losses are
# shift-invariant per query, where a bias would be unidentifiable
INTERCEPT_LOSSES = ("pointwise_mse", "weighted_regression")


class LinearRanker(Ranker):
    """Linear (or quadratic) scoring function trained by L-BFGS-B on a ranking loss + l2/2 ||theta||^2.

    * ``functional="linear"``: score = w'x. ``functional="quadratic"``: score =
      w'x + sum_k c_k x_{i_k} x_{j_k} over the 0-based feature index ``pairs``
      (Tran et al. 2011, Eq. 4; e.g. the pairs kept by :class:`rankstudy.pairs.SecondOrderSelector`),
      evaluated in chunks of ``chunk_rows`` rows; the penalty covers both w and c.
    * ``loss_params``: keyword options for the loss (e.g. ``{"block_elements": 4096}`` for
      ranknet); they override ``seed`` for a loss that takes one.
    * ``group``: one of :data:`rankstudy.groups.GROUP_AGGREGATES` to train on label-tie
      groups (:func:`rankstudy.groups.grouped_loss`); prediction still scores each document.

    ``loss`` is any name of :mod:`rankstudy.loss_registry`. A bias is fitted only for the
    regression losses (:data:`INTERCEPT_LOSSES`): every other loss is invariant to a
    constant shift of a query's scores, so a bias would be unidentifiable there.
    ``seed`` drives ListMLE's label tie-break (start point is theta = 0: all losses are
    convex in the scores and both functionals are linear in theta, so no random restarts
    are needed).

    History: one dict per L-BFGS iteration (step 0 = the start point) with
    ``objective`` (loss + penalty), ``train_loss`` and, when vali is given, ``vali_loss``.
    """

    kind = "linear"

    def __init__(self, loss: str = "ranknet", l2: float = 1e-3, max_iter: int = 200,
                 tol: float = 1e-6, seed: int = 0, loss_params: dict | None = None,
                 group: str | None = None, functional: str = "linear",
                 pairs: list[list[int]] | None = None, chunk_rows: int = 8192) -> None:
        super().__init__()
        # fail at construction on unknown names or inconsistent settings
        loss_fn = get_loss(loss)
        if functional not in FUNCTIONALS:
            raise ValueError(f"unknown functional {functional!r}; valid functionals: {', '.join(FUNCTIONALS)}")
        if group is not None:
            check_aggregate(group)
        if functional == "quadratic" and pairs is None:
            raise ValueError("functional='quadratic' needs pairs (a list of [i, j] feature index pairs)")
        if functional == "linear" and pairs is not None:
            raise ValueError("pairs only apply to functional='quadratic'")
        if int(chunk_rows) < 1:
            raise ValueError("chunk_rows must be >= 1")
        _check_loss_options(loss, loss_fn, loss_params or {})
        self.loss = loss
        self.l2 = l2
        self.max_iter = max_iter
        self.tol = tol
        self.seed = seed
        self.loss_params = None if loss_params is None else dict(loss_params)
        self.group = group
        self.functional = functional
        # kept as plain lists so get_params() stays JSON data
        self.pairs = None if pairs is None else check_pairs(pairs).tolist()
        self.chunk_rows = chunk_rows

    @property
    def fit_intercept(self) -> bool:
        return self.loss in INTERCEPT_LOSSES

    def loss_function(self):
        fn = get_loss(self.loss)
        options = {}
        if "seed" in inspect.signature(fn).parameters:
            options["seed"] = self.seed
        options.update(self.loss_params or {})
        if options:
            fn = partial(fn, **options)
        return grouped_loss(fn, self.group) if self.group is not None else fn

    def objective(self, data: RankData) -> LinearObjective:
        if self.functional == "quadratic":
            return QuadraticObjective(data, self.loss_function(), self.l2, self.fit_intercept,
                                      self.pairs, self.chunk_rows)
        return LinearObjective(data, self.loss_function(), self.l2, self.fit_intercept)

    def fit(self, train: RankData, vali: RankData | None = None) -> "LinearRanker":
        train_obj = self.objective(train)
        vali_obj = self.objective(vali) if vali is not None else None
        result, history = minimize_lbfgs(train_obj, np.zeros(train_obj.n_params), vali_obj,
                                         tol=self.tol, max_iter=self.max_iter)
        m, k = train.n_features, train_obj.n_weights
        self.coef_ = np.asarray(result.x[:m], dtype=np.float64)
        self.pair_coef_ = np.asarray(result.x[m:k], dtype=np.float64)
        self.intercept_ = float(result.x[k]) if self.fit_intercept else 0.0
        self.n_iter_ = int(result.nit)
        self.n_fev_ = int(result.nfev)
        self.converged_ = bool(result.success)
        self.history_ = history
        return self

    def predict(self, data: RankData) -> np.ndarray:
        if not hasattr(self, "coef_"):
            raise NotFittedError("LinearRanker is not fitted")
        if data.n_features != len(self.coef_):
            raise ValueError(f"expected {len(self.coef_)} features, got {data.n_features}")
        if self.functional == "quadratic":
            scores = quadratic_scores(data.X, self.pairs, self.coef_, self.pair_coef_, self.chunk_rows)
        else:
            scores = data.X @ self.coef_
        return scores + self.intercept_

    def _get_state(self) -> dict:
        state = {"coef": self.coef_.tolist(), "intercept": self.intercept_,
                 "n_iter": self.n_iter_, "n_fev": self.n_fev_, "converged": self.converged_}
        if self.functional == "quadratic":
            state["pair_coef"] = self.pair_coef_.tolist()
        return state

    def _set_state(self, state: dict) -> None:
        self.coef_ = np.asarray(state["coef"], dtype=np.float64)
        # models saved before the quadratic functional existed have no pair_coef
        self.pair_coef_ = np.asarray(state.get("pair_coef", []), dtype=np.float64)
        if len(self.pair_coef_) != len(self.pairs or []):
            raise ValueError(f"saved state has {len(self.pair_coef_)} pair coefficients "
                             f"for {len(self.pairs or [])} pairs")
        self.intercept_ = float(state["intercept"])
        self.n_iter_ = int(state["n_iter"])
        self.n_fev_ = int(state["n_fev"])
        self.converged_ = bool(state["converged"])


def _check_loss_options(name: str, loss_fn, options: dict) -> None:
    """Reject loss_params the loss does not take, naming the ones it does (a typo in a
    config would otherwise only surface as a TypeError in the middle of fit)."""
    params = inspect.signature(loss_fn).parameters
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
        return
    valid = [p for p, spec in list(params.items())[3:] if spec.kind is not inspect.Parameter.VAR_POSITIONAL]
    unknown = sorted(set(options) - set(valid))
    if unknown:
        raise ValueError(f"unknown loss_params {', '.join(map(repr, unknown))} for loss {name!r}; "
                         f"valid options: {', '.join(valid) or '(none)'}")


# --------------------------------------------------------------------------- LambdaMART

def _integer_labels(y: np.ndarray) -> np.ndarray:
    labels = np.rint(y)
    if not np.array_equal(labels, y) or labels.min() < 0:
        raise ValueError("LambdaMART needs non-negative integer relevance labels")
    return labels.astype(np.int32)


class LambdaMART(Ranker):
    """Gradient-boosted trees with LightGBM's lambdarank objective (gains 2^r - 1).

    With ``vali``, training stops when validation NDCG@10 has not improved for
    ``early_stopping_rounds`` rounds and the model is cut back to the best iteration;
    without it all ``n_estimators`` rounds are kept. Single-threaded and
    ``deterministic=True`` so a given seed reproduces the same model.

    History: one dict per boosting round with ``train_ndcg@10`` and, when vali is
    given, ``vali_ndcg@10``; ``best_iteration_`` is the number of rounds kept.
    """

    kind = "lambdamart"
    eval_at = 10

    def __init__(self, n_estimators: int = 300, learning_rate: float = 0.05, num_leaves: int = 31,
                 min_data_in_leaf: int = 20, lambda_l2: float = 0.0, early_stopping_rounds: int = 30,
                 seed: int = 0) -> None:
        super().__init__()
        self.n_estimators = n_estimators
        self.learning_rate = learning_rate
        self.num_leaves = num_leaves
        self.min_data_in_leaf = min_data_in_leaf
        self.lambda_l2 = lambda_l2
        self.early_stopping_rounds = early_stopping_rounds
        self.seed = seed

    def lightgbm_params(self) -> dict:
        return {
            "objective": "lambdarank", "metric": "ndcg", "eval_at": [self.eval_at],
            "learning_rate": self.learning_rate, "num_leaves": self.num_leaves,
            "min_data_in_leaf": self.min_data_in_leaf, "lambda_l2": self.lambda_l2,
            "seed": self.seed, "deterministic": True, "force_row_wise": True,
            "num_threads": 1, "verbosity": -1,
        }

    def fit(self, train: RankData, vali: RankData | None = None) -> "LambdaMART":
        import lightgbm as lgb

        params = self.lightgbm_params()
        dtrain = lgb.Dataset(train.X, label=_integer_labels(train.y), group=train.query_lengths,
                             params={"verbosity": -1})
        sets, names = [dtrain], ["train"]
        if vali is not None:
            sets.append(lgb.Dataset(vali.X, label=_integer_labels(vali.y), group=vali.query_lengths,
                                    reference=dtrain))
            names.append("vali")
        evals: dict = {}
        callbacks = [lgb.record_evaluation(evals)]
        if vali is not None and self.early_stopping_rounds:
            # LightGBM's early stopping ignores the training set and watches "vali"
            callbacks.append(lgb.early_stopping(int(self.early_stopping_rounds), verbose=False))
        booster = lgb.train(params, dtrain, num_boost_round=int(self.n_estimators),
                            valid_sets=sets, valid_names=names, callbacks=callbacks)
        best = booster.best_iteration if booster.best_iteration > 0 else booster.current_iteration()
        # keep only the best rounds so predict() and the saved model agree
        self._set_state({"model": booster.model_to_string(num_iteration=best), "best_iteration": best})
        metric = f"ndcg@{self.eval_at}"
        self.history_ = [
            {"step": i + 1, **{f"{name}_{metric}": float(evals[name][metric][i]) for name in names}}
            for i in range(len(evals["train"][metric]))
        ]
        return self

    def predict(self, data: RankData) -> np.ndarray:
        if not hasattr(self, "booster_"):
            raise NotFittedError("LambdaMART is not fitted")
        if data.n_features != self.booster_.num_feature():
            raise ValueError(f"expected {self.booster_.num_feature()} features, got {data.n_features}")
        return np.asarray(self.booster_.predict(data.X, num_threads=1), dtype=np.float64)

    def _get_state(self) -> dict:
        return {"model": self.booster_.model_to_string(), "best_iteration": self.best_iteration_}

    def _set_state(self, state: dict) -> None:
        import lightgbm as lgb

        self.booster_ = lgb.Booster(model_str=state["model"])
        self.best_iteration_ = int(state["best_iteration"])


# --------------------------------------------------------------------------- registry

RANKERS: dict[str, type[Ranker]] = {"linear": LinearRanker, "lambdamart": LambdaMART}


def _ranker_class(kind: str) -> type[Ranker]:
    # the registry spans modules that build on this one, hence the import here
    from rankstudy.ranker_registry import ranker_class

    return ranker_class(kind)


def make_ranker(kind: str, params: dict | None = None) -> Ranker:
    from rankstudy.ranker_registry import make_ranker as make

    return make(kind, params)


def load_ranker(path: str | os.PathLike) -> Ranker:
    return Ranker.load(path)
