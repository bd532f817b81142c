"""Neural rankers: a network scorer trained by minibatch Adam on any registered loss."""

from __future__ import annotations

from rankstudy.losses.registry import LOSSES, bind_loss
from rankstudy.rankers.scored import ScoredRanker, loss_options_error
from rankstudy.scorers import attention, inputs, mlp
from rankstudy.scorers.mlp import MLPScorer, input_statistics
from rankstudy.solvers import adam
from rankstudy.solvers.registry import make_solver
from rankstudy.util.params import SEED, Choice, Mapping, Param, ParamError, Real, check_value

# each scorer declares its settings (the attention module imports JAX only when it first scores)
SCORER_PARAMETERS = {"mlp": mlp.PARAMETERS, "attention": attention.PARAMETERS}
SCORERS = tuple(SCORER_PARAMETERS)
# settings both scorers take (activation, dropout, the input tricks): each checks its own values
SHARED = [name for name in mlp.PARAMETERS if name in attention.PARAMETERS]
ACTIVATIONS = {name: tuple(params["activation"].constraints[0].options) for name, params in SCORER_PARAMETERS.items()}


class NeuralRanker(ScoredRanker):
    """A network scorer on a ranking loss + l2/2 ||weights||^2, trained by minibatch Adam
    (:class:`~rankstudy.solvers.adam.Adam`) with early stopping on the validation split.

    * ``scorer="mlp"``: :class:`~rankstudy.scorers.mlp.MLPScorer` with ``hidden`` layer sizes,
      ``activation``, ``dropout`` and ``input_norm`` (``"batch"``: statistics of the training
      split, saved with the model; ``"layer"``: per document).
    * ``scorer="attention"``: :class:`~rankstudy.scorers.attention.AttentionScorer` (allRank's
      context-aware scorer, in JAX) with ``d_model``, ``n_blocks``, ``n_heads``, ``d_ff``,
      ``activation`` and ``dropout``; ``hidden`` and ``input_norm`` do not apply.
    * ``loss``: any name of :mod:`rankstudy.losses.registry`; ``loss_params`` its options.
    * Adam: ``learning_rate``, ``epochs``, ``batch_size`` (queries), ``weight_decay`` (AdamW),
      ``schedule`` (``step_epochs``, ``gamma`` for ``step``), ``clip_norm``,
      ``max_list_length`` (training lists longer than this are sampled), ``patience`` and
      ``metric`` (early stopping on the validation split; the best epoch is kept, as
      ``best_epoch_``).
    * ``input_transform`` (``log1p``: sign(x) log(1 + |x|) of every feature, in training and
      prediction) and ``input_noise`` (std of Gaussian noise on the training features): DASALC's
      input tricks, for both scorers (:mod:`rankstudy.scorers.inputs`); ``none`` and 0 by default.
    * ``seed``: the initial weights, the batches, the list sampling, the dropout masks and the
      input noise, and the label tie-break of the Plackett-Luce losses; same seed, same model (on
      one machine).

    Every setting is declared once, where it is used (the scorers' ``PARAMETERS``, Adam's), with
    its tuning space; the ranker composes them.
    """

    kind = "neural"
    # composed from the scorers' and Adam's declarations, in the order the parameters always had
    # (the input tricks last); a scorer's own settings are tuned only with that scorer
    parameters = {
        "scorer": Param(Choice(SCORERS, "scorer"), "mlp"),
        "hidden": mlp.PARAMETERS["hidden"].when(scorer="mlp"),
        # every scorer's activations; the default is the default scorer's (mlp)
        "activation": Param(Choice(sorted({a for acts in ACTIVATIONS.values() for a in acts}), "activation"),
                            mlp.DEFAULTS["activation"], help="the scorer's activation (each scorer takes its own)"),
        "dropout": mlp.PARAMETERS["dropout"],  # the attention scorer declares the same
        "input_norm": mlp.PARAMETERS["input_norm"].when(scorer="mlp"),
        **{name: attention.PARAMETERS[name].when(scorer="attention") for name in ("d_model", "n_blocks", "n_heads", "d_ff")},
        "loss": Param(Choice(lambda: sorted(LOSSES), "loss"), "listnet"),
        "loss_params": Param([None, Mapping()], None),
        "l2": Param(Real(0), 0.0, help="l2/2 ||weights||^2 in the objective (weight_decay: AdamW's)"),
        **{name: param for name, param in adam.PARAMETERS.items() if name != "seed"},
        "seed": SEED,
        **inputs.PARAMETERS,
    }
    input_stats_: dict | None = None  # the "batch" input norm's statistics (training split)

    @classmethod
    def check_combination(cls, params: dict) -> None:
        loss_options_error(params["loss"], params["loss_params"])
        scorer = params["scorer"]
        for name in SHARED:  # the scorer in use takes its own values (the attention scorer has no sigmoid)
            check_value(name, params[name], SCORER_PARAMETERS[scorer][name].constraints)
        if scorer == "attention":
            if params["input_norm"] is not None:
                raise ParamError("input_norm", "input_norm applies to the mlp scorer only")
            attention.check_relations(params)

    def scorer_settings(self) -> dict:
        return {name: getattr(self, name) for name in SCORER_PARAMETERS[self.scorer]}

    def make_scorer(self):
        if self.scorer == "attention":
            return attention.AttentionScorer(**self.scorer_settings())
        return MLPScorer(**self.scorer_settings(), input_stats=self.input_stats_)

    def make_loss(self):
        return bind_loss(self.loss, self.loss_params, seed=self.seed)

    def make_solver(self):
        return make_solver("adam", {name: getattr(self, name) for name in adam.PARAMETERS})

    def fit(self, train, vali=None) -> "NeuralRanker":
        # the batch norm's statistics come from the training split, and validation uses them too
        self.input_stats_ = (input_statistics(train.X, self.input_transform)
                             if self.input_norm == "batch" else None)
        return super().fit(train, vali)

    def _adopt(self, solution, objective) -> None:
        super()._adopt(solution, objective)
        self.best_epoch_ = solution.best_step

    def _get_state(self) -> dict:
        return {**super()._get_state(), "best_epoch": self.best_epoch_}

    def _set_state(self, state: dict) -> None:
        self.input_stats_ = ({"input_mean": state["input_mean"], "input_scale": state["input_scale"]}
                             if self.input_norm == "batch" else None)
        self.best_epoch_ = state.get("best_epoch")
        super()._set_state({k: v for k, v in state.items() if k != "best_epoch"})
