"""Rankers: small estimator objects with fit/predict; parameters as plain data (see :mod:`rankstudy.rankers.base`)."""
