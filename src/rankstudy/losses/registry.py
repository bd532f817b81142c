"""Every loss by name: the one table configs and rankers look losses up in.

A new loss is one function in its family's module (conventions in :mod:`rankstudy.losses`)
plus one entry in :data:`LOSSES`; :func:`bind_loss` gives a ranker the loss with its options.
"""

from __future__ import annotations

import inspect
from functools import partial

from rankstudy.losses import baseline, cdn, conditional, elementwise, pairwise, smoothed, structured
from rankstudy.losses.groups import check_aggregate, grouped_loss
from rankstudy.losses.padded import LossFn
from rankstudy.util.names import lookup

LOSSES: dict[str, LossFn] = {
    # baselines
    "pointwise_mse": baseline.pointwise_mse,
    "ranknet": baseline.ranknet,
    "ranksvm": baseline.ranksvm,
    "listnet": baseline.listnet,
    "listmle": baseline.listmle,
    # Tran et al. (2011): element-wise (Eqs. 5, 8, 11-16)
    "multiclass_logistic": elementwise.multiclass_logistic,
    "weighted_regression": elementwise.weighted_regression,
    "wpl": elementwise.wpl,
    "rpl": elementwise.rpl,
    "wpll": elementwise.wpll,
    # Tran et al. (2011): pairwise (Eqs. 9, 17-18)
    "pairwise": pairwise.pairwise_loss,
    "wub": pairwise.wub,
    # Tran et al. (2011): smoothed metrics (Eqs. 6-7)
    "smoothed_ndcg": smoothed.smoothed_ndcg,
    "smoothed_err": smoothed.smoothed_err,
    "smoothed_mrr": smoothed.smoothed_mrr,
    # Chakrabarti et al. (2008): structural SVMs (structured hinges, for the cutting-plane solver)
    "svm_auc": structured.svm_auc,
    "svm_map": structured.svm_map,
    "svm_ndcg": structured.svm_ndcg,
    "svm_ndcg_nc": structured.svm_ndcg_nc,
    "svm_mrr": structured.svm_mrr,
    "svm_mrr_po": structured.svm_mrr_po,
    "dorm": structured.dorm,
    "svm_combo": structured.svm_combo,
    # Huang and Frey (2008): cumulative distribution networks over pairwise preferences
    "cdn": cdn.cdn,
    # Dubey et al. (2009): conditional models over rankings, sums over a swap-sampler sample
    "mle": conditional.mle,
    "exp_gain": conditional.exp_gain,
    "exp_gain_auc": conditional.exp_gain_auc,
    "l3": conditional.l3,
    "convex_loss": conditional.convex_loss,
}


def get_loss(name: str) -> LossFn:
    return lookup(LOSSES, name, "loss")


def loss_options(name: str) -> list[str]:
    """The keyword options a loss takes (everything after scores, labels, mask)."""
    params = list(inspect.signature(get_loss(name)).parameters.values())[3:]
    return [p.name for p in params if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]


def check_loss_options(name: str, options: dict) -> None:
    """Reject options the loss does not take, naming the ones it does (a typo in a config
    would otherwise only surface as a TypeError in the middle of fit)."""
    valid = loss_options(name)
    unknown = sorted(set(options) - set(valid))
    if unknown:
        raise ValueError(f"unknown loss_params {', '.join(map(repr, unknown))} for loss {name!r}; "
                         f"valid options: {', '.join(valid) or '(none)'}")


def bind_loss(name: str, options: dict | None = None, *, seed: int | None = None,
              group: str | None = None) -> LossFn:
    """The loss ``name`` with its ``options`` fixed, as ``loss(scores, labels, mask)``.

    ``seed`` goes to a loss that takes one (label tie-breaks), unless ``options`` set it;
    ``group`` applies the loss to label-tie groups (:func:`rankstudy.losses.groups.grouped_loss`).
    """
    fn = get_loss(name)
    options = dict(options or {})
    check_loss_options(name, options)
    if seed is not None and "seed" in loss_options(name):
        options = {"seed": seed, **options}
    if options:
        fn = partial(fn, **options)
    if group is not None:
        fn = grouped_loss(fn, check_aggregate(group))
    return fn
