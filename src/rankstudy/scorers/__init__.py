"""Scoring functions f(x; theta) with their vector-Jacobian products (see :mod:`rankstudy.scorers.base`)."""
