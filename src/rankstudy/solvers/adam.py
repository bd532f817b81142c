"""Minibatch Adam over batches of queries, as neural rankers are trained (allRank, PT-Ranking).

Each epoch shuffles the training queries (a generator seeded by ``seed``) and takes one Adam
step (Kingma and Ba 2015) per batch of ``batch_size`` queries, on the objective of that batch
(the loss over its queries + the L2 penalty) in the scorer's training mode (dropout masks from
the same generator). Options:

* ``weight_decay``: decoupled weight decay (AdamW, Loshchilov and Hutter 2019) on the penalised
  parameters (the weights, not the biases): theta <- theta - lr * weight_decay * theta;
* ``schedule``: the learning rate per step, ``constant``; ``cosine`` (from ``learning_rate`` to
  0 over all the steps of ``epochs`` epochs); ``step`` (times ``gamma`` every ``step_epochs``);
* ``clip_norm``: gradients rescaled to a global L2 norm of at most this (None: no clipping);
* ``max_list_length``: a training query with more documents keeps a random subset of this many
  in each epoch (drawn anew every epoch, kept in their order), as allRank's ``slate_length``
  samples long lists; over the epochs every document is seen. Validation and the objective
  the history records use the whole lists;
* early stopping: after each epoch the validation split is scored and ``metric`` (a name of
  :mod:`rankstudy.evaluation.metrics`, mean over queries) computed; training stops once it has
  not improved for ``patience`` epochs (None: never stops early), and the parameters of the best
  epoch are returned (``Solution.best_step``). Without a validation split, the last epoch's.

Parameters that must stay >= 0 (a kernel's bandwidths, a CDN's weights) are clipped at 0 after
each step, so the solver fits any loss with a (sub)gradient and any scorer.

History: one dict per epoch; step 0 is the start, with ``objective`` (loss + penalty on the whole
training split, which the did-it-learn check compares with the end) and ``train_loss``. Every
entry has ``epoch``, ``train_loss`` (from epoch 1: the mean of the epoch's batch losses, in
training mode), ``vali_metric`` and ``vali_loss`` when there is a validation split,
``learning_rate`` (at the epoch's last step), ``grad_norm`` (mean over its batches, before
clipping) and ``seconds``.
"""

from __future__ import annotations

import math
import time
import numpy as np

from rankstudy.evaluation.metrics import per_query
from rankstudy.solvers import settings
from rankstudy.solvers.base import Solution
from rankstudy.util import intermediate
from rankstudy.util.progress import Progress

# the solver's settings, declared once in rankstudy.solvers.settings (the neural ranker composes them)
PARAMETERS = settings.ADAM


def batch_rows(offsets: np.ndarray, queries: np.ndarray, max_length: int | None,
               rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """The rows of ``queries`` (in that order) and their offsets; a query longer than
    ``max_length`` keeps a uniformly random subset of ``max_length`` rows, in their order."""
    starts, lengths = offsets[queries], np.diff(offsets)[queries]
    segment = np.repeat(np.arange(len(queries)), lengths)
    within = np.arange(int(lengths.sum())) - np.repeat(np.cumsum(lengths) - lengths, lengths)
    rows = np.repeat(starts, lengths) + within
    if max_length is None or lengths.max(initial=0) <= max_length:
        return rows, np.concatenate([[0], np.cumsum(lengths)])
    # a random rank of each row within its query: keep the rows ranked below max_length
    order = np.lexsort((rng.random(len(rows)), segment))
    rank = np.empty(len(rows), dtype=np.int64)
    rank[order] = within  # order keeps the queries' blocks in place, so position = rank
    keep = rank < max_length
    kept = np.minimum(lengths, max_length)
    return rows[keep], np.concatenate([[0], np.cumsum(kept)])


class Adam(settings.Declared):
    """See the module docstring."""

    name = "adam"
    parameters = PARAMETERS

    def __init__(self, *, beta1: float = 0.9, beta2: float = 0.999, eps: float = 1e-8, **given) -> None:
        """``given``: any of :data:`PARAMETERS` by name (checked), the others their declared defaults."""
        super().__init__(**given)
        self.beta1, self.beta2, self.eps = beta1, beta2, eps

    def rate(self, step: int, epoch: int, total_steps: int) -> float:
        """The learning rate of (0-based) ``step``, taken in (1-based) ``epoch``."""
        if self.schedule == "cosine":
            return self.learning_rate * 0.5 * (1.0 + math.cos(math.pi * step / total_steps))
        if self.schedule == "step":
            return self.learning_rate * self.gamma ** ((epoch - 1) // self.step_epochs)
        return self.learning_rate

    def vali_metric(self, vali, theta: np.ndarray) -> float:
        scores = vali.scores(theta)  # kept for the validation loss recorded next: one forward pass
        return float(np.nanmean(per_query(scores, vali.data.y, vali.data.offsets, [self.metric])[self.metric]))

    def solve(self, objective, theta0: np.ndarray, vali=None) -> Solution:
        theta = np.array(theta0, dtype=np.float64)
        nonnegative = objective.nonnegative
        theta[nonnegative] = np.maximum(theta[nonnegative], 0.0)
        penalized = np.zeros(len(theta), dtype=bool)
        penalized[:objective.scorer.n_penalized] = True
        rng = np.random.default_rng(self.seed)
        n_queries = objective.data.n_queries
        per_epoch = math.ceil(n_queries / self.batch_size)
        total_steps = per_epoch * self.epochs
        m, v = np.zeros_like(theta), np.zeros_like(theta)
        history: list[dict] = []
        n_fev, step = 0, 0

        def record(entry: dict) -> None:
            if vali is not None:
                entry["vali_metric"] = self.vali_metric(vali, theta)
                entry["vali_loss"] = float(vali.data_loss(theta))
            history.append(entry)

        start_value = objective(theta, need_grad=False)[0]
        record({"step": 0, "epoch": 0, "objective": float(start_value), "train_loss": float(objective.last_loss),
                "learning_rate": self.rate(0, 1, total_steps)})
        best = (-np.inf, 0, theta.copy())  # (vali metric, epoch, theta)
        converged = False
        epochs = Progress("adam", total=self.epochs, unit="epoch")
        for epoch in range(1, self.epochs + 1):
            began = time.perf_counter()
            order = rng.permutation(n_queries)
            losses, norms, sizes = [], [], []
            within = Progress(f"adam epoch {epoch}/{self.epochs}", total=per_epoch, unit="batch")
            for b in range(per_epoch):
                queries = order[b * self.batch_size:(b + 1) * self.batch_size]
                rows, offsets = batch_rows(objective.data.offsets, queries, self.max_list_length, rng)
                value, grad = objective.batch(rows, offsets)(theta, rng=rng)
                n_fev += 1
                losses.append(value)
                sizes.append(len(queries))
                norm = float(np.linalg.norm(grad))
                norms.append(norm)
                if self.clip_norm is not None and norm > self.clip_norm:
                    grad = grad * (self.clip_norm / norm)
                lr = self.rate(step, epoch, total_steps)
                step += 1
                m = self.beta1 * m + (1 - self.beta1) * grad
                v = self.beta2 * v + (1 - self.beta2) * grad * grad
                m_hat = m / (1 - self.beta1 ** step)
                v_hat = v / (1 - self.beta2 ** step)
                if self.weight_decay:
                    theta[penalized] *= 1.0 - lr * self.weight_decay
                theta -= lr * m_hat / (np.sqrt(v_hat) + self.eps)
                theta[nonnegative] = np.maximum(theta[nonnegative], 0.0)
                if b + 1 < per_epoch:
                    within.update(b + 1, loss=float(value))
            record({"step": epoch, "epoch": epoch, "train_loss": float(np.average(losses, weights=sizes)),
                    "learning_rate": lr, "grad_norm": float(np.mean(norms)),
                    "seconds": time.perf_counter() - began})
            entry = history[-1]
            score = entry.get("vali_metric", -np.inf)
            if vali is None or score > best[0]:
                best = (score, epoch, theta.copy())
            epochs.update(epoch, train_loss=entry["train_loss"],
                          **({f"vali_{self.metric}": score, "best_epoch": best[1]} if vali is not None else {}))
            if vali is not None and np.isfinite(score):  # for tuning's pruner
                intermediate.report(epoch, score)
            if self.patience is not None and vali is not None and epoch - best[1] >= self.patience:
                converged = True  # the validation metric stopped improving
                break
        return Solution(theta=best[2], n_iter=len(history) - 1, n_fev=n_fev, converged=converged,
                        history=history, best_step=best[1])
