"""Neural rankers: a network scorer trained by minibatch Adam on any registered loss."""

from __future__ import annotations

from rankstudy.evaluation.metrics import parse_metric
from rankstudy.losses.registry import LOSSES, bind_loss
from rankstudy.util.params import Choice, Integer, Listing, Mapping, Real, Text
from rankstudy.rankers.scored import ScoredRanker, loss_options_error
from rankstudy.util.params import ParamError
from rankstudy.scorers import attention, mlp
from rankstudy.scorers.mlp import INPUT_NORMS, MLPScorer, input_statistics
from rankstudy.solvers.adam import SCHEDULES
from rankstudy.solvers.registry import SolverSettings, make_solver

# each scorer's activations (the attention module imports JAX only when it first scores)
ACTIVATIONS = {"mlp": mlp.ACTIVATIONS, "attention": attention.ACTIVATIONS}
SCORERS = tuple(ACTIVATIONS)


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
    * ``seed``: the initial weights, the batches, the list sampling and the dropout masks, and
      the label tie-break of the Plackett-Luce losses; same seed, same model (on one machine).
    """

    kind = "neural"
    parameter_constraints = {
        "scorer": [Choice(SCORERS, "scorer")],
        "hidden": [None, Listing(Integer(1), what="a list of positive integers (hidden layer sizes)")],
        "activation": [Choice(sorted({a for acts in ACTIVATIONS.values() for a in acts}), "activation")],
        "d_model": [Integer(1)], "n_blocks": [Integer(1)], "n_heads": [Integer(1)], "d_ff": [Integer(1)],
        "dropout": [Real(0, 1, high_open=True)],
        "input_norm": [None, Choice(INPUT_NORMS, "input_norm")],
        "loss": [Choice(lambda: sorted(LOSSES), "loss")], "loss_params": [None, Mapping()], "l2": [Real(0)],
        "learning_rate": [Real(0, low_open=True)], "epochs": [Integer(1)], "batch_size": [Integer(1)],
        "weight_decay": [Real(0)], "schedule": [Choice(SCHEDULES, "schedule")], "step_epochs": [Integer(1)],
        "gamma": [Real(0, 1, low_open=True)], "clip_norm": [None, Real(0, low_open=True)],
        "patience": [None, Integer(1)], "metric": [Text(parse_metric, what="a metric name such as ndcg@10")],
        "max_list_length": [None, Integer(1)], "seed": [Integer()],
    }

    def __init__(self, scorer: str = "mlp", hidden: list[int] | None = None, activation: str = "relu",
                 dropout: float = 0.0, input_norm: str | None = None, d_model: int = 64, n_blocks: int = 2,
                 n_heads: int = 1, d_ff: int = 128, loss: str = "listnet",
                 loss_params: dict | None = None, l2: float = 0.0, learning_rate: float = 1e-3, epochs: int = 50,
                 batch_size: int = 64, weight_decay: float = 0.0, schedule: str = "constant",
                 step_epochs: int = 10, gamma: float = 0.1, clip_norm: float | None = None,
                 patience: int | None = 10, metric: str = "ndcg@10", max_list_length: int | None = None,
                 seed: int = 0) -> None:
        super().__init__()
        self.scorer = scorer
        self.hidden = [64, 32] if hidden is None else list(hidden)  # a list, so get_params() stays JSON data
        self.activation = activation
        self.dropout = dropout
        self.input_norm = input_norm
        self.d_model = d_model
        self.n_blocks = n_blocks
        self.n_heads = n_heads
        self.d_ff = d_ff
        self.loss = loss
        self.loss_params = None if loss_params is None else dict(loss_params)
        self.l2 = l2
        self.learning_rate = learning_rate
        self.epochs = epochs
        self.batch_size = batch_size
        self.weight_decay = weight_decay
        self.schedule = schedule
        self.step_epochs = step_epochs
        self.gamma = gamma
        self.clip_norm = clip_norm
        self.patience = patience
        self.metric = metric
        self.max_list_length = max_list_length
        self.seed = seed
        self.input_stats_: dict | None = None  # the "batch" input norm's statistics (training split)

    @classmethod
    def check_combination(cls, params: dict) -> None:
        loss_options_error(params["loss"], params["loss_params"])
        scorer = params["scorer"]
        if params["activation"] not in ACTIVATIONS[scorer]:
            raise ParamError("activation", f"the {scorer} scorer's activations are {', '.join(ACTIVATIONS[scorer])}, "
                             f"got {params['activation']!r}")
        if scorer == "attention":
            if params["input_norm"] is not None:
                raise ParamError("input_norm", "input_norm applies to the mlp scorer only")
            if params["d_model"] % params["n_heads"]:
                raise ParamError("n_heads", f"d_model ({params['d_model']}) must be a multiple of n_heads "
                                            f"({params['n_heads']})")

    def make_scorer(self):
        if self.scorer == "attention":
            return attention.AttentionScorer(self.d_model, self.n_blocks, self.n_heads, self.d_ff, self.activation,
                                             self.dropout)
        return MLPScorer(self.hidden, self.activation, self.dropout, self.input_norm, self.input_stats_)

    def make_loss(self):
        return bind_loss(self.loss, self.loss_params, seed=self.seed)

    def make_solver(self):
        return make_solver("adam", SolverSettings(
            learning_rate=self.learning_rate, epochs=self.epochs, batch_size=self.batch_size,
            weight_decay=self.weight_decay, schedule=self.schedule, step_epochs=self.step_epochs, gamma=self.gamma,
            clip_norm=self.clip_norm, patience=self.patience, metric=self.metric,
            max_list_length=self.max_list_length, seed=self.seed))

    def fit(self, train, vali=None) -> "NeuralRanker":
        # the batch norm's statistics come from the training split, and validation uses them too
        self.input_stats_ = input_statistics(train.X) if self.input_norm == "batch" else None
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
