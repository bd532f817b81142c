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

Every query is one call of its inference routine: the loop over queries is inherent to
these combinatorial problems; each routine is vectorised within its query.
"""

from __future__ import annotations

import numpy as np

from rankstudy.losses import inference
from rankstudy.losses.padded import clean, query_weights

CRITERIA = ("auc", "map", "ndcg", "ndcg_nc", "mrr", "mrr_po", "dorm")
SLACKS = ("shared", "separate")


def _check_k(k) -> int:
    if int(k) != k or k < 1:
        raise ValueError(f"k must be a positive integer, got {k!r}")
    return int(k)


def _query_inference(criterion: str, k: int, cut: int | None):
    """The per-query routine ``(s, z) -> (H, coef)`` of a criterion."""
    if criterion == "auc":
        return inference.auc_po
    if criterion == "map":
        return inference.map_po
    if criterion == "ndcg":
        return lambda s, z: inference.ndcg_po(s, z, k)
    if criterion == "ndcg_nc":
        return lambda s, z: inference.ndcg_po(s, z, None)
    if criterion == "mrr":
        return lambda s, z: inference.mrr_mrr(s, z, k)
    if criterion == "mrr_po":
        return lambda s, z: inference.mrr_po(s, z, k)
    if criterion == "dorm":
        return lambda s, z: inference.ndcg_dorm(s, z, k, cut)
    raise ValueError(f"unknown criterion {criterion!r}; valid: {', '.join(CRITERIA)}")


def structured_hinges(scores, labels, mask, criteria: tuple[str, ...], *, rel_threshold: float = 1.0,
                      k: int = 10, cut: int | None = None):
    """Per criterion: the hinge H_q of every query (Q,) and its coefficients coef (Q, L), with
    the bool (Q,) of queries that have a good and a bad document."""
    k = _check_k(k)
    if cut is not None:
        _check_k(cut)
    s, y, mask = clean(scores, labels, mask)
    good = mask & (y >= rel_threshold)
    active = (good.any(axis=1)) & ((mask & ~good).any(axis=1))
    routines = [_query_inference(c, k, cut) for c in criteria]
    hinge = np.zeros((len(criteria), s.shape[0]))
    coef = np.zeros((len(criteria), *s.shape))
    for q in np.flatnonzero(active):
        cols = np.flatnonzero(mask[q])
        for c, routine in enumerate(routines):
            hinge[c, q], coef[c, q, cols] = routine(s[q, cols], good[q, cols])
    return hinge, coef, active


def _mean_hinge(hinge: np.ndarray, coef: np.ndarray, active: np.ndarray):
    weights = query_weights(active)
    return float((hinge * weights).sum()), -coef * weights[:, None]


def _single(criterion: str, scores, labels, mask, **options):
    hinge, coef, active = structured_hinges(scores, labels, mask, (criterion,), **options)
    return _mean_hinge(hinge[0], coef[0], active)


def svm_auc(scores, labels, mask, *, rel_threshold: float = 1.0):
    """SVMauc (Joachims 2005): phi_po with Delta_AUC; the structural form of RankSVM."""
    return _single("auc", scores, labels, mask, rel_threshold=rel_threshold)


def svm_map(scores, labels, mask, *, rel_threshold: float = 1.0):
    """SVMmap (Yue et al. 2007): phi_po with 1 - AP."""
    return _single("map", scores, labels, mask, rel_threshold=rel_threshold)


def svm_ndcg(scores, labels, mask, *, rel_threshold: float = 1.0, k: int = 10):
    """SVMndcg (Section 3.4): phi_po with 1 - NDCG@k."""
    return _single("ndcg", scores, labels, mask, rel_threshold=rel_threshold, k=k)


def svm_ndcg_nc(scores, labels, mask, *, rel_threshold: float = 1.0):
    """SVMndcg-nc: phi_po with 1 - NDCG over the whole list (no clip)."""
    return _single("ndcg_nc", scores, labels, mask, rel_threshold=rel_threshold)


def svm_mrr(scores, labels, mask, *, rel_threshold: float = 1.0, k: int = 10):
    """SVMmrr (Section 3.6): phi_mrr with 1 - MRR@k."""
    return _single("mrr", scores, labels, mask, rel_threshold=rel_threshold, k=k)


def svm_mrr_po(scores, labels, mask, *, rel_threshold: float = 1.0, k: int = 10):
    """phi_po with 1 - MRR@k (Figure 7's comparison with phi_mrr)."""
    return _single("mrr_po", scores, labels, mask, rel_threshold=rel_threshold, k=k)


def dorm(scores, labels, mask, *, rel_threshold: float = 1.0, k: int = 10, cut: int | None = None):
    """DORM (Le and Smola 2008): phi_dorm with decay 1/sqrt(1 + r) (0 from rank ``cut`` on)
    and 1 - NDCG@k; phi_dorm(y*) is averaged over the orders that put the goods first."""
    return _single("dorm", scores, labels, mask, rel_threshold=rel_threshold, k=k, cut=cut)


def svm_combo(scores, labels, mask, *, criteria: tuple[str, ...] | list[str] = ("map", "ndcg", "ndcg_nc", "mrr"),
              slacks: str = "separate", rel_threshold: float = 1.0, k: int = 10, cut: int | None = None):
    """SVMcombo (Section 3.7): several criteria at once, with ``shared`` slacks (per query the
    largest hinge) or ``separate`` slacks (per query their sum)."""
    criteria = tuple(criteria)
    if not criteria or len(set(criteria)) != len(criteria):
        raise ValueError(f"criteria must be distinct names of {', '.join(CRITERIA)}, got {criteria!r}")
    if slacks not in SLACKS:
        raise ValueError(f"unknown slacks {slacks!r}; valid: {', '.join(SLACKS)}")
    hinge, coef, active = structured_hinges(scores, labels, mask, criteria, rel_threshold=rel_threshold,
                                            k=k, cut=cut)
    if slacks == "separate":
        return _mean_hinge(hinge.sum(axis=0), coef.sum(axis=0), active)
    top = np.argmax(hinge, axis=0)  # per query, the most violated criterion
    rows = np.arange(hinge.shape[1])
    return _mean_hinge(hinge[top, rows], coef[top, rows], active)
