"""Every ranker kind by name, and the two ways to get one: from config data
(:func:`make_ranker`) or from a saved model file (:func:`load_ranker`).

A new ranker is one class (a :class:`~rankstudy.rankers.base.Ranker`, usually a
:class:`~rankstudy.rankers.scored.ScoredRanker`) plus one entry here. An entry may name its
class as ``"module:Class"``: it is imported when the kind is first used, so a job imports only
the ranker it trains.
"""

from __future__ import annotations

import json
import os

from rankstudy.rankers.base import SAVE_FORMAT, Ranker
from rankstudy.util.lazy import LazyRegistry
from rankstudy.util.names import lookup

RANKERS: dict[str, type[Ranker]] = LazyRegistry({
    "linear": "rankstudy.rankers.linear:LinearRanker",
    "lambdamart": "rankstudy.rankers.lambdamart:LambdaMART",
    "mcrank": "rankstudy.rankers.mcrank:McRank",
    "separate": "rankstudy.rankers.separate:SeparateRanker",
    "structsvm": "rankstudy.rankers.structsvm:StructSVMRanker",
    "structrank": "rankstudy.rankers.structrank:StructRank",
    "conditional": "rankstudy.rankers.conditional:ConditionalRanker",
    "rankboost": "rankstudy.rankers.rankboost:RankBoost",
    "mart": "rankstudy.rankers.mart:MART",
    "random_forest": "rankstudy.rankers.forest:RandomForest",
    "coordinate_ascent": "rankstudy.rankers.coordinate_ascent:CoordinateAscent",
    "adarank": "rankstudy.rankers.adarank:AdaRank",
    "neural": "rankstudy.rankers.neural:NeuralRanker",
    # the gbdt extra's libraries, imported only when such a ranker is fitted or loaded
    "xgboost": "rankstudy.rankers.xgboost_ranker:XGBoostRanker",
    "catboost": "rankstudy.rankers.catboost_ranker:CatBoostRanker",
})


def ranker_class(kind: str) -> type[Ranker]:
    return lookup(RANKERS, kind, "ranker kind")


def make_ranker(kind: str, params: dict | None = None) -> Ranker:
    """Build a ranker from plain data (e.g. a config entry); building checks the parameters (their
    names, values and how they fit together: :class:`~rankstudy.rankers.base.Ranker`)."""
    return ranker_class(kind)(**(params or {}))


def load_ranker(path: str | os.PathLike, expected: type[Ranker] = Ranker) -> Ranker:
    """Load a saved ranker as the class of its saved kind (which must be ``expected`` or a
    subclass of it)."""
    with open(path) as f:
        doc = json.load(f)
    if doc.get("format") != SAVE_FORMAT:
        raise ValueError(f"{path}: not a saved rankstudy ranker")
    klass = ranker_class(doc["kind"])
    if not issubclass(klass, expected):
        raise ValueError(f"{path} holds a {doc['kind']!r} ranker, not a {expected.__name__}")
    return klass.from_document(doc)
