"""Every loss by name: the one table configs and rankers look losses up in.

A new loss is one function in its family's module (conventions in :mod:`rankstudy.losses`)
plus one entry in :data:`LOSSES`, a :class:`Loss` that says what the loss needs:

* ``bias``: it compares scores with labels (regression), so the scorer must fit an intercept;
  ranking losses are shift-invariant per query, where a bias would be unidentifiable;
* ``smooth``: it is differentiable, so gradient solvers (L-BFGS) fit it; the structured hinges
  are piecewise linear;
* ``convex`` (in the scores): the cutting-plane solver's lower model of it is exact;
* ``options``: what each of its keyword options may be, ``{option: [constraint, ...]}``
  (:mod:`rankstudy.util.params`; the lists several losses share are in
  :mod:`rankstudy.losses.options`): every option its function takes, and only those (tested),
  without defaults, which are the function's.

Which solvers fit which losses follows from these (:func:`rankstudy.solvers.registry.check_solver`),
and the config check refuses the rest before any job runs; it checks the options a config gives
against the declarations alone (:func:`check_loss_options`): no loss is called. :func:`bind_loss`
gives a ranker the loss with its options, as a :class:`BoundLoss` that still knows its name and
entry.

An entry's function may be given as ``"family.function"`` (a module of this package): it is
imported when the loss is first used, so a job imports only the loss families it trains with.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from functools import partial

from rankstudy.losses.groups import check_aggregate, grouped_loss
from rankstudy.losses.options import (
    ANY_NUMBER,
    BLOCK_ELEMENTS,
    CDN,
    CRITERIA,
    CUT,
    CUTOFF,
    ELEMENT_WEIGHTED,
    GAIN,
    GAINED,
    LATENT,
    N_LEVELS,
    NEURAL_NDCG,
    NORMALIZE,
    PAIR_WEIGHT,
    PHI,
    REL_THRESHOLD,
    SAMPLED,
    SEED,
    SLACKS,
    TEMPERATURE,
    TOP_K,
    WEIGHTING,
    WUB_GAMMA,
    WUB_WEIGHT,
)
from rankstudy.losses.padded import LossFn
from rankstudy.util.lazy import load
from rankstudy.util.names import lookup
from rankstudy.util.params import Param, ParamError, Real, check_value


@dataclass(frozen=True)
class Loss:
    """A registered loss and what it needs (see the module docstring); called as the loss.
    ``fn`` is the function, or ``"family.function"`` naming it in a module of this package;
    ``options`` declares what each of its keyword options may be (none: it takes none)."""

    fn: LossFn | str
    bias: bool = False
    smooth: bool = True
    convex: bool = False
    options: dict[str, list] = field(default_factory=dict, hash=False)

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
    "ranknet": Loss("baseline.ranknet", convex=True, options={"block_elements": BLOCK_ELEMENTS}),
    "ranksvm": Loss("baseline.ranksvm", convex=True),
    "listnet": Loss("baseline.listnet", convex=True),
    "listmle": Loss("baseline.listmle", convex=True, options={"seed": SEED}),
    # Tran et al. (2011): element-wise (Eqs. 5, 8, 11-16)
    "multiclass_logistic": Loss("elementwise.multiclass_logistic", convex=True,
                                options={"n_levels": N_LEVELS, "seed": SEED}),
    "weighted_regression": Loss("elementwise.weighted_regression", bias=True, convex=True, options=ELEMENT_WEIGHTED),
    "wpl": Loss("elementwise.wpl", options=ELEMENT_WEIGHTED),
    "rpl": Loss("elementwise.rpl", options=ELEMENT_WEIGHTED),
    "wpll": Loss("elementwise.wpll", options={**ELEMENT_WEIGHTED, "block_elements": BLOCK_ELEMENTS}),
    # Tran et al. (2011): pairwise (Eqs. 9, 17-18)
    "pairwise": Loss("pairwise.pairwise_loss", options={"phi": PHI, "weight": PAIR_WEIGHT, "n_levels": N_LEVELS,
                                                         "seed": SEED, "block_elements": BLOCK_ELEMENTS}),
    "wub": Loss("pairwise.wub", options={"weight": WUB_WEIGHT, "gamma": WUB_GAMMA, "n_levels": N_LEVELS, "seed": SEED,
                                         "block_elements": BLOCK_ELEMENTS}),
    # Tran et al. (2011): smoothed metrics (Eqs. 6-7)
    "smoothed_ndcg": Loss("smoothed.smoothed_ndcg", options={"k": TOP_K, "temperature": TEMPERATURE,
                                                             "block_elements": BLOCK_ELEMENTS}),
    "smoothed_err": Loss("smoothed.smoothed_err", options={"temperature": TEMPERATURE, "n_levels": N_LEVELS,
                                                           "block_elements": BLOCK_ELEMENTS}),
    "smoothed_mrr": Loss("smoothed.smoothed_mrr", options={"temperature": TEMPERATURE, "rel_threshold": REL_THRESHOLD,
                                                           "block_elements": BLOCK_ELEMENTS}),
    # Chakrabarti et al. (2008): structural SVMs (structured hinges, for the cutting-plane solver)
    "svm_auc": Loss("structured.svm_auc", **_hinge, options={"rel_threshold": REL_THRESHOLD}),
    "svm_map": Loss("structured.svm_map", **_hinge, options={"rel_threshold": REL_THRESHOLD}),
    "svm_ndcg": Loss("structured.svm_ndcg", **_hinge, options={"rel_threshold": REL_THRESHOLD, "k": CUTOFF}),
    "svm_ndcg_nc": Loss("structured.svm_ndcg_nc", **_hinge, options={"rel_threshold": REL_THRESHOLD}),
    "svm_mrr": Loss("structured.svm_mrr", **_hinge, options={"rel_threshold": REL_THRESHOLD, "k": CUTOFF,
                                                             "latent": LATENT}),
    "svm_mrr_po": Loss("structured.svm_mrr_po", **_hinge, options={"rel_threshold": REL_THRESHOLD, "k": CUTOFF}),
    "dorm": Loss("structured.dorm", **_hinge, options={"rel_threshold": REL_THRESHOLD, "k": CUTOFF, "cut": CUT,
                                                       "latent": LATENT}),
    "svm_combo": Loss("structured.svm_combo", **_hinge, options={"criteria": CRITERIA, "slacks": SLACKS,
                                                                 "rel_threshold": REL_THRESHOLD, "k": CUTOFF,
                                                                 "cut": CUT, "latent": LATENT}),
    # Huang and Frey (2008): cumulative distribution networks over pairwise preferences
    "cdn": Loss("cdn.cdn", convex=True, options=CDN),
    # Dubey et al. (2009): conditional models over rankings, sums over a swap-sampler sample
    "mle": Loss("conditional.mle", convex=True, options=SAMPLED),
    "exp_gain": Loss("conditional.exp_gain", options=GAINED),
    "exp_gain_auc": Loss("conditional.exp_gain_auc", options={"rel_threshold": REL_THRESHOLD, "normalize": NORMALIZE}),
    "l3": Loss("conditional.l3", options=GAINED),
    "convex_loss": Loss("conditional.convex_loss", convex=True, options=GAINED),
    # the last decade, after Rax and allRank: softmax family, approximate and relaxed NDCG, LambdaLoss
    "rmse": Loss("baseline.rmse", bias=True, convex=True, options={"scale": ANY_NUMBER}),
    "softmax": Loss("listwise.softmax", convex=True, options={"gain": GAIN}),
    "poly1": Loss("listwise.poly1", options={"epsilon": ANY_NUMBER, "gain": GAIN}),
    "approx_ndcg": Loss("listwise.approx_ndcg", options={"temperature": TEMPERATURE, "k": TOP_K, "gain": GAIN,
                                                         "block_elements": BLOCK_ELEMENTS}),
    "neural_ndcg": Loss("listwise.neural_ndcg", options=NEURAL_NDCG),
    # piecewise smooth: the weights jump where two documents of different gains swap ranks
    "lambdaloss": Loss("lambdaloss.lambdaloss", options={"weighting": WEIGHTING, "k": TOP_K,
                                                         "sigma": [Real(0, low_open=True)], "mu": ANY_NUMBER,
                                                         "block_elements": BLOCK_ELEMENTS}),
}


def loss_entry(name: str) -> Loss:
    """The registered loss with its facts (bias, smooth, convex, options)."""
    return lookup(LOSSES, name, "loss")


def get_loss(name: str) -> LossFn:
    return loss_entry(name).function


def _keyword_options(name: str) -> list[inspect.Parameter]:
    params = list(inspect.signature(get_loss(name)).parameters.values())[3:]
    return [p for p in params if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]


def loss_options(name: str) -> list[str]:
    """The keyword options a loss takes (everything after scores, labels, mask)."""
    return [p.name for p in _keyword_options(name)]


def loss_option_defaults(name: str) -> dict:
    """``{option: default}`` of a loss: its function's signature, the defaults' one home."""
    return {p.name: p.default for p in _keyword_options(name)}


def loss_option_param(loss: str, option: str, **param_kwargs) -> Param:
    """A ranker's parameter that is ``option`` of ``loss``, from the loss's one declaration: its
    constraint list (the entry's own list) and its function's default. ``param_kwargs`` are the
    rest of the :class:`Param` (``help``, ``space``); a ``default`` there only where the ranker
    departs from the loss on purpose (and says why). Reads the loss's signature, so it imports
    the loss's module: for rankers that import it anyway."""
    if "default" not in param_kwargs:
        param_kwargs["default"] = loss_option_defaults(loss)[option]
    return Param(loss_entry(loss).options[option], **param_kwargs)


def check_loss_options(name: str, options: dict) -> None:
    """The one check of a loss's options (a ranker's, when it is built: by the config check before
    any job, and by the train job), ParamError naming the option: one the loss does not
    take (a typo would otherwise surface as a TypeError mid-fit), then a value its declaration
    (``Loss.options``) refuses. Only the declarations are read: the loss is never called, nor its
    module imported (but for a choice among names its family defines, read to check a value), so
    NeuralNDCG's JAX stays out of the config check's process and the numba kernels uncompiled."""
    declared = loss_entry(name).options
    for option in options:
        if option not in declared:
            raise ParamError(option, f"unknown option {option!r} of loss {name!r}; "
                                     f"valid options: {', '.join(declared) or '(none)'}")
    for option, value in options.items():
        check_value(option, value, declared[option])


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
