"""Structural-SVM losses of Chakrabarti et al. (KDD 2008) as losses over padded queries.

Per query, the structured hinge H_q(s) = max_y [Delta(y*, y) - w'(phi(x, y*) - phi(x, y))],
with y found by loss-augmented inference (:mod:`rankstudy.losses.inference`), is a convex,
piecewise linear function of the scores; its gradient is -coef of the maximising y. The
loss is the mean of H_q over the queries that have a good and a bad document (label >=
``rel_threshold`` or not), the usual convention (:mod:`rankstudy.losses`), so

    l2/2 ||w||^2 + loss  =  (1/C) (1/2 ||w||^2 + C/|Q| sum_q xi_q)  at  l2 = 1/C,

the structural SVM's objective (Eq. 1) at its optimal slacks. The cutting-plane solver
(:mod:`rankstudy.solvers.cutting_plane`) minimises it; any solver can.

``svm_combo`` (Section 3.7) combines several criteria: ``slacks="shared"`` takes the largest
of their hinges per query (one slack per query for all criteria), ``"separate"`` their sum
(one slack per query and criterion).

``dorm`` and ``svm_mrr`` (and ``mrr``/``dorm`` inside ``svm_combo``) take ``latent``: True
(default) lets the scores choose among the equally ideal targets (y* sorted by score within
each class; the highest-scored good as the first good), False keeps the paper's recipe (the
average goods-first y*; the lowest-scored good), which on OHSUMED has its optimum at w = 0 (see
:mod:`rankstudy.losses.inference`). The latent hinge is not convex; :func:`anchored` gives the
convex upper bound with the target fixed by anchor scores, which the ranker's CCCP rounds
minimise.

Every query is one call of its inference routine: the loop over queries is inherent to
these combinatorial problems; each routine is vectorised within its query.
"""

from __future__ import annotations

import numpy as np

from rankstudy.data.rankdata import REL_THRESHOLD
from rankstudy.evaluation.metrics import K
from rankstudy.losses import inference
from rankstudy.losses.padded import clean, query_weights

CRITERIA = ("auc", "map", "ndcg", "ndcg_nc", "mrr", "mrr_po", "dorm")
LATENT = ("mrr", "dorm")  # the criteria whose target the scores can choose (module docstring)
SLACKS = ("shared", "separate")
COMBO_CRITERIA = ("map", "ndcg", "ndcg_nc", "mrr")  # svm_combo's default criteria


def _query_inference(criterion: str, k: int, cut: int | None):
    """The per-query routine ``(s, z, anchor) -> (H, coef)`` of a criterion of :data:`CRITERIA`
    (``anchor`` is used by the latent criteria only)."""
    return {
        "auc": lambda s, z, a: inference.auc_po(s, z),
        "map": lambda s, z, a: inference.map_po(s, z),
        "ndcg": lambda s, z, a: inference.ndcg_po(s, z, k),
        "ndcg_nc": lambda s, z, a: inference.ndcg_po(s, z, None),
        "mrr": lambda s, z, a: inference.mrr_mrr(s, z, k, a),
        "mrr_po": lambda s, z, a: inference.mrr_po(s, z, k),
        "dorm": lambda s, z, a: inference.ndcg_dorm(s, z, k, cut, a),
    }[criterion]


def structured_hinges(scores, labels, mask, criteria: tuple[str, ...], *, rel_threshold: float = REL_THRESHOLD,
                      k: int = K, cut: int | None = None, latent: bool = True, anchor=None):
    """Per criterion: the hinge H_q of every query (Q,) and its coefficients coef (Q, L), with
    the bool (Q,) of queries that have a good and a bad document. ``latent``: the latent form
    of ``mrr`` and ``dorm``, with the target chosen by ``anchor`` (padded (Q, L) scores) or,
    when it is None, by the scores themselves."""
    s, y, mask = clean(scores, labels, mask)
    if latent:
        anchor = s if anchor is None else clean(anchor, labels, mask)[0]
    good = mask & (y >= rel_threshold)
    active = (good.any(axis=1)) & ((mask & ~good).any(axis=1))
    routines = [_query_inference(c, k, cut) for c in criteria]
    hinge = np.zeros((len(criteria), s.shape[0]))
    coef = np.zeros((len(criteria), *s.shape))
    for q in np.flatnonzero(active):
        cols = np.flatnonzero(mask[q])
        a = anchor[q, cols] if latent else None
        for c, routine in enumerate(routines):
            hinge[c, q], coef[c, q, cols] = routine(s[q, cols], good[q, cols], a)
    return hinge, coef, active


def _mean_hinge(hinge: np.ndarray, coef: np.ndarray, active: np.ndarray):
    weights = query_weights(active)
    return float((hinge * weights).sum()), -coef * weights[:, None]


def _single(criterion: str, scores, labels, mask, **options):
    hinge, coef, active = structured_hinges(scores, labels, mask, (criterion,), **options)
    return _mean_hinge(hinge[0], coef[0], active)


def svm_auc(scores, labels, mask, *, rel_threshold: float = REL_THRESHOLD):
    """SVMauc (Joachims 2005): phi_po with Delta_AUC; the structural form of RankSVM."""
    return _single("auc", scores, labels, mask, rel_threshold=rel_threshold)


def svm_map(scores, labels, mask, *, rel_threshold: float = REL_THRESHOLD):
    """SVMmap (Yue et al. 2007): phi_po with 1 - AP."""
    return _single("map", scores, labels, mask, rel_threshold=rel_threshold)


def svm_ndcg(scores, labels, mask, *, rel_threshold: float = REL_THRESHOLD, k: int = K):
    """SVMndcg (Section 3.4): phi_po with 1 - NDCG@k.

    Near w = 0 this hinge is almost flat on data whose classes overlap: any ranking with k bads
    on top has Delta = 1, whatever follows, so H >= 1 + (a positively homogeneous function of
    s) there, and unless some w scores the goods above the k highest-scored bads by more than
    all other inversions cost, the hinge cannot fall below its value at w = 0. On OHSUMED fold 3
    the objective falls by about 9e-7 C (9e-5 at C = 100, 9e-4 at C = 1000; fold 4 half that),
    |w| grows in proportion to C: a slope of about 1e-3, so w stays near 0 over the Figure 9
    grid, as in the paper's Figure 5 ("SVMmap and SVMndcg stay close to w = 0"); the small w
    still ranks about as well as RankSVM. SVMndcg-nc, the paper's remedy for the clip, trains."""
    return _single("ndcg", scores, labels, mask, rel_threshold=rel_threshold, k=k)


def svm_ndcg_nc(scores, labels, mask, *, rel_threshold: float = REL_THRESHOLD):
    """SVMndcg-nc: phi_po with 1 - NDCG over the whole list (no clip)."""
    return _single("ndcg_nc", scores, labels, mask, rel_threshold=rel_threshold)


def svm_mrr(scores, labels, mask, *, rel_threshold: float = REL_THRESHOLD, k: int = K, latent: bool = True):
    """SVMmrr (Section 3.6): phi_mrr with 1 - MRR@k; ``latent``: the first good is the
    highest-scored one (False: the paper's, the lowest-scored one)."""
    return _single("mrr", scores, labels, mask, rel_threshold=rel_threshold, k=k, latent=latent)


def svm_mrr_po(scores, labels, mask, *, rel_threshold: float = REL_THRESHOLD, k: int = K):
    """phi_po with 1 - MRR@k (Figure 7's comparison with phi_mrr)."""
    return _single("mrr_po", scores, labels, mask, rel_threshold=rel_threshold, k=k)


def dorm(scores, labels, mask, *, rel_threshold: float = REL_THRESHOLD, k: int = K, cut: int | None = None,
         latent: bool = True):
    """DORM (Le and Smola 2008): phi_dorm with decay 1/sqrt(1 + r) (0 from rank ``cut`` on)
    and 1 - NDCG@k; ``latent``: y* is the goods-first order sorted by score within each class
    (False: phi_dorm(y*) averaged over the orders that put the goods first). At k = 10 on
    OHSUMED's long queries its hinge is as flat near w = 0 as :func:`svm_ndcg`'s, and it does not
    learn; at k = 30 (the decay's cut) or beyond it does (docs/results/2026-11-leaderboard.md)."""
    return _single("dorm", scores, labels, mask, rel_threshold=rel_threshold, k=k, cut=cut, latent=latent)


def svm_combo(scores, labels, mask, *, criteria: tuple[str, ...] | list[str] = COMBO_CRITERIA,
              slacks: str = "separate", rel_threshold: float = REL_THRESHOLD, k: int = K, cut: int | None = None,
              latent: bool = True):
    """SVMcombo (Section 3.7): several criteria at once, with ``shared`` slacks (per query the
    largest hinge) or ``separate`` slacks (per query their sum); ``latent`` applies to its
    ``mrr`` and ``dorm`` criteria."""
    return _combo(scores, labels, mask, criteria, slacks, rel_threshold=rel_threshold, k=k, cut=cut, latent=latent)


def _combo(scores, labels, mask, criteria, slacks, **options):
    criteria = tuple(criteria)
    hinge, coef, active = structured_hinges(scores, labels, mask, criteria, **options)
    if slacks == "separate":
        return _mean_hinge(hinge.sum(axis=0), coef.sum(axis=0), active)
    top = np.argmax(hinge, axis=0)  # per query, the most violated criterion
    rows = np.arange(hinge.shape[1])
    return _mean_hinge(hinge[top, rows], coef[top, rows], active)


# the criteria of each structured loss, for the latent machinery below
_CRITERIA_OF = {"svm_auc": ("auc",), "svm_map": ("map",), "svm_ndcg": ("ndcg",), "svm_ndcg_nc": ("ndcg_nc",),
                "svm_mrr": ("mrr",), "svm_mrr_po": ("mrr_po",), "dorm": ("dorm",)}


def is_latent(name: str, options: dict) -> bool:
    """Whether the structured loss ``name`` with ``options`` has a latent target (a criterion
    of :data:`LATENT` with ``latent`` on), i.e. is not convex in the scores."""
    criteria = _CRITERIA_OF.get(name) or tuple(options.get("criteria", COMBO_CRITERIA))
    return bool(options.get("latent", True)) and any(c in LATENT for c in criteria)


def anchored(name: str, options: dict, anchor: np.ndarray):
    """The latent loss ``name`` with its target fixed by ``anchor`` (padded (Q, L) scores):
    ``loss(scores, labels, mask)``, convex in the scores, >= the latent loss everywhere and
    equal to it at scores = anchor (the CCCP surrogate)."""
    anchor = np.asarray(anchor, dtype=np.float64)
    options = {**options, "latent": True}
    if name == "svm_combo":
        criteria = options.pop("criteria", COMBO_CRITERIA)
        slacks = options.pop("slacks", "separate")
        return lambda scores, labels, mask: _combo(scores, labels, mask, criteria, slacks, anchor=anchor, **options)
    (criterion,) = _CRITERIA_OF[name]
    return lambda scores, labels, mask: _single(criterion, scores, labels, mask, anchor=anchor, **options)
