"""Structural SVMs for non-smooth ranking losses (Chakrabarti et al., KDD 2008): a linear
scorer trained on a structured hinge (:mod:`rankstudy.losses.structured`) by the cutting-plane
solver (:mod:`rankstudy.solvers.cutting_plane`)."""

from __future__ import annotations

import numpy as np

from rankstudy.losses.registry import bind_loss, check_loss_options, get_loss
from rankstudy.rankers.scored import ScoredRanker
from rankstudy.scorers.linear import LinearScorer
from rankstudy.solvers.registry import solver_class

STRUCTURED_LOSSES = ("svm_auc", "svm_map", "svm_ndcg", "svm_ndcg_nc", "svm_mrr", "svm_mrr_po", "dorm", "svm_combo")


class StructSVMRanker(ScoredRanker):
    """min 1/2 ||w||^2 + C/|Q| sum_q xi_q  s.t.  w'(phi(x, y*) - phi(x, y)) >= Delta(y*, y) - xi_q,
    i.e. l2/2 ||w||^2 + mean structured hinge with l2 = 1/C.

    * ``loss``: ``svm_auc`` (SVMauc, the structural RankSVM), ``svm_map``, ``svm_ndcg``,
      ``svm_ndcg_nc``, ``svm_mrr``, ``svm_mrr_po`` (phi_po with Delta_MRR), ``dorm`` or ``svm_combo``; ``loss_params`` its options
      (``k``, ``cut``, ``criteria``, ``slacks``); ``rel_threshold`` makes labels binary.
    * ``C``: the SVM's regularisation constant; ``epsilon`` the cutting plane's tolerance;
      ``max_iter`` its iterations; ``solver``: ``cutting_plane`` (or ``lbfgs``, which handles
      the kinks of a hinge badly and is there for comparison).
    """

    kind = "structsvm"

    def __init__(self, loss: str = "svm_ndcg", C: float = 1.0, epsilon: float = 1e-3, max_iter: int = 500,
                 rel_threshold: float = 1.0, loss_params: dict | None = None, solver: str = "cutting_plane",
                 seed: int = 0) -> None:
        super().__init__()
        if loss not in STRUCTURED_LOSSES:
            get_loss(loss)  # an unknown name gets the full list of losses
            raise ValueError(f"loss {loss!r} is not a structured loss; valid: {', '.join(STRUCTURED_LOSSES)}")
        options = {"rel_threshold": rel_threshold, **(loss_params or {})}
        check_loss_options(loss, options)
        if not C > 0:
            raise ValueError(f"C must be > 0, got {C!r}")
        solver_class(solver)
        self.loss = loss
        self.C = C
        self.epsilon = epsilon
        self.max_iter = max_iter
        self.rel_threshold = rel_threshold
        self.loss_params = None if loss_params is None else dict(loss_params)
        self.solver = solver
        self.seed = seed

    @property
    def l2(self) -> float:
        return 1.0 / float(self.C)

    def make_scorer(self) -> LinearScorer:
        return LinearScorer()

    def make_loss(self):
        return bind_loss(self.loss, {"rel_threshold": self.rel_threshold, **(self.loss_params or {})}, seed=self.seed)

    def make_solver(self):
        if self.solver == "cutting_plane":
            return solver_class(self.solver)(epsilon=self.epsilon, max_iter=self.max_iter)
        return solver_class(self.solver)(max_iter=self.max_iter)

    @property
    def coef_(self) -> np.ndarray:
        return np.asarray(self.parts_["coef"], dtype=np.float64)
