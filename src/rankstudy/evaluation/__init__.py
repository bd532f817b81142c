"""Evaluation: one ranking per query, metrics by name, and the run files of scores."""
