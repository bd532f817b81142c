"""Every loss by name: the one table configs and rankers look losses up in.

A new loss is one function in its family's module (conventions in :mod:`rankstudy.losses`)
plus one entry in :data:`LOSSES`, a :class:`Loss` that says what the loss needs:

* ``bias``: it compares scores with labels (regression), so the scorer must fit an intercept;
  ranking losses are shift-invariant per query, where a bias would be unidentifiable;
* ``smooth``: it is differentiable, so gradient solvers (L-BFGS) fit it; the structured hinges
  are piecewise linear;
* ``convex`` (in the scores): the cutting-plane solver's lower model of it is exact;
* ``options``: ``"family.NAME"`` of what each of its options may be (``{option: [constraint,
  ...]}``, :mod:`rankstudy.util.params`), for a loss whose first call is dear (JAX, numba
  kernels); the options of the others are checked by calling the loss once (:func:`check_loss_options`).

Which solvers fit which losses follows from these (:func:`rankstudy.solvers.registry.check_solver`),
and the config check refuses the rest before any job runs. :func:`bind_loss` gives a ranker the
loss with its options, as a :class:`BoundLoss` that still knows its name and entry.

An entry's function may be given as ``"family.function"`` (a module of this package): it is
imported when the loss is first used, so a job imports only the loss families it trains with.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from functools import partial

import numpy as np

from rankstudy.losses.groups import check_aggregate, grouped_loss
from rankstudy.losses.padded import LossFn
from rankstudy.util.lazy import load
from rankstudy.util.names import lookup
from rankstudy.util.params import check_value


@dataclass(frozen=True)
class Loss:
    """A registered loss and what it needs (see the module docstring); called as the loss.
    ``fn`` is the function, or ``"family.function"`` naming it in a module of this package;
    ``options`` likewise names its declared option constraints (None: none declared)."""

    fn: LossFn | str
    bias: bool = False
    smooth: bool = True
    convex: bool = False
    options: str | None = None

    @property
    def declared_options(self) -> dict | None:
        if self.options is None:
            return None
        module, _, name = self.options.rpartition(".")
        return load(f"rankstudy.losses.{module}:{name}")

    @property
    def function(self) -> LossFn:
        if isinstance(self.fn, str):
            module, _, name = self.fn.rpartition(".")
            object.__setattr__(self, "fn", load(f"rankstudy.losses.{module}:{name}"))
        return self.fn

    def __call__(self, scores, labels, mask, **options):
        return self.function(scores, labels, mask, **options)


@dataclass(frozen=True)
class BoundLoss:
    """A registered loss with its options fixed: ``loss(scores, labels, mask)``, which still
    knows its ``name`` and registry ``entry`` (so a ranker can check that its solver fits it)."""

    name: str
    entry: Loss
    fn: LossFn

    def __call__(self, scores, labels, mask, *args, **kwargs):
        return self.fn(scores, labels, mask, *args, **kwargs)


# the structured hinges: convex, piecewise linear, no bias (Chakrabarti et al.'s Eq. 1)
_hinge = dict(smooth=False, convex=True)

LOSSES: dict[str, Loss] = {
    # baselines
    "pointwise_mse": Loss("baseline.pointwise_mse", bias=True, convex=True),
    "ranknet": Loss("baseline.ranknet", convex=True),
    "ranksvm": Loss("baseline.ranksvm", convex=True),
    "listnet": Loss("baseline.listnet", convex=True),
    "listmle": Loss("baseline.listmle", convex=True),
    # Tran et al. (2011): element-wise (Eqs. 5, 8, 11-16)
    "multiclass_logistic": Loss("elementwise.multiclass_logistic", convex=True),
    "weighted_regression": Loss("elementwise.weighted_regression", bias=True, convex=True),
    "wpl": Loss("elementwise.wpl"),
    "rpl": Loss("elementwise.rpl"),
    "wpll": Loss("elementwise.wpll"),
    # Tran et al. (2011): pairwise (Eqs. 9, 17-18)
    "pairwise": Loss("pairwise.pairwise_loss"),
    "wub": Loss("pairwise.wub"),
    # Tran et al. (2011): smoothed metrics (Eqs. 6-7)
    "smoothed_ndcg": Loss("smoothed.smoothed_ndcg"),
    "smoothed_err": Loss("smoothed.smoothed_err"),
    "smoothed_mrr": Loss("smoothed.smoothed_mrr"),
    # Chakrabarti et al. (2008): structural SVMs (structured hinges, for the cutting-plane solver)
    "svm_auc": Loss("structured.svm_auc", **_hinge),
    "svm_map": Loss("structured.svm_map", **_hinge),
    "svm_ndcg": Loss("structured.svm_ndcg", **_hinge),
    "svm_ndcg_nc": Loss("structured.svm_ndcg_nc", **_hinge),
    "svm_mrr": Loss("structured.svm_mrr", **_hinge),
    "svm_mrr_po": Loss("structured.svm_mrr_po", **_hinge),
    "dorm": Loss("structured.dorm", **_hinge),
    "svm_combo": Loss("structured.svm_combo", **_hinge),
    # Huang and Frey (2008): cumulative distribution networks over pairwise preferences
    "cdn": Loss("cdn.cdn", convex=True, options="cdn.OPTIONS"),
    # Dubey et al. (2009): conditional models over rankings, sums over a swap-sampler sample
    "mle": Loss("conditional.mle", convex=True, options="conditional.SAMPLED_OPTIONS"),
    "exp_gain": Loss("conditional.exp_gain", options="conditional.GAINED_OPTIONS"),
    "exp_gain_auc": Loss("conditional.exp_gain_auc"),
    "l3": Loss("conditional.l3", options="conditional.GAINED_OPTIONS"),
    "convex_loss": Loss("conditional.convex_loss", convex=True, options="conditional.GAINED_OPTIONS"),
    # the last decade, after Rax and allRank: softmax family, approximate and relaxed NDCG, LambdaLoss
    "rmse": Loss("baseline.rmse", bias=True, convex=True),
    "softmax": Loss("listwise.softmax", convex=True),
    "poly1": Loss("listwise.poly1"),
    "approx_ndcg": Loss("listwise.approx_ndcg"),
    "neural_ndcg": Loss("listwise.neural_ndcg", options="listwise.NEURAL_NDCG_OPTIONS"),
    # piecewise smooth: the weights jump where two documents of different gains swap ranks
    "lambdaloss": Loss("lambdaloss.lambdaloss"),
}


def loss_entry(name: str) -> Loss:
    """The registered loss with its facts (bias, smooth, convex)."""
    return lookup(LOSSES, name, "loss")


def get_loss(name: str) -> LossFn:
    return loss_entry(name).function


def loss_options(name: str) -> list[str]:
    """The keyword options a loss takes (everything after scores, labels, mask)."""
    params = list(inspect.signature(get_loss(name)).parameters.values())[3:]
    return [p.name for p in params if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]


def check_loss_options(name: str, options: dict) -> None:
    """The one check of a loss's options (a ranker's, when it is built: by the config check before
    any job, and by the train job), ValueError naming the problem: an option the loss does not
    take (from its signature; a typo would otherwise surface as a TypeError mid-fit), then a value
    its declared constraints refuse (``Loss.options``), or, for a loss that declares none, what it
    raises when called once on a tiny list (a wrong weight or phi name, found now rather than
    mid-run). A loss with declared options, or given none, is never called here: NeuralNDCG's JAX
    stays out of the config check's process, the numba kernels uncompiled."""
    valid = loss_options(name)
    unknown = sorted(set(options) - set(valid))
    if unknown:
        raise ValueError(f"unknown loss_params {', '.join(map(repr, unknown))} for loss {name!r}; "
                         f"valid options: {', '.join(valid) or '(none)'}")
    if not options:  # nothing given, nothing to check: the loss is not called (a numba kernel would compile)
        return
    declared = loss_entry(name).declared_options
    if declared is not None:
        for option, value in options.items():
            check_value(option, value, declared[option])
        return
    scores, labels = np.array([[0.3, -0.2, 0.1]]), np.array([[2.0, 0.0, 1.0]])
    try:
        get_loss(name)(scores, labels, np.ones((1, 3), bool), **options)
    except TypeError as exc:  # a value of the wrong type, as the loss says it
        raise ValueError(str(exc)) from None


def bind_loss(name: str, options: dict | None = None, *, seed: int | None = None,
              group: str | None = None) -> LossFn:
    """The loss ``name`` with its ``options`` fixed, as ``loss(scores, labels, mask)``.

    ``seed`` goes to a loss that takes one (label tie-breaks), unless ``options`` set it;
    ``group`` applies the loss to label-tie groups (:func:`rankstudy.losses.groups.grouped_loss`).
    """
    entry = loss_entry(name)
    fn = entry.function
    options = dict(options or {})  # checked by the ranker that binds it (check_loss_options)
    if seed is not None and "seed" in loss_options(name):
        options = {"seed": seed, **options}
    if options:
        fn = partial(fn, **options)
    if group is not None:
        fn = grouped_loss(fn, check_aggregate(group))
    return BoundLoss(name, entry, fn)
