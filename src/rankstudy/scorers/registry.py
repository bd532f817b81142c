"""Every scorer by name (the scoring functions a ranker can train; see
:mod:`rankstudy.scorers.base`). A new scorer is one class plus one entry here."""

from __future__ import annotations

from rankstudy.scorers.base import Scorer
from rankstudy.scorers.kernel import NadarayaWatsonScorer
from rankstudy.scorers.linear import LinearScorer
from rankstudy.scorers.quadratic import QuadraticScorer
from rankstudy.scorers.separate import SeparateScorer
from rankstudy.util.names import lookup

SCORERS: dict[str, type[Scorer]] = {
    "linear": LinearScorer,
    "quadratic": QuadraticScorer,
    "separate": SeparateScorer,
    "nadaraya_watson": NadarayaWatsonScorer,
}


def scorer_class(name: str) -> type[Scorer]:
    return lookup(SCORERS, name, "scorer")
