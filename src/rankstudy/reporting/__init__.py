"""Reporting: comparison tables with significance tests, plots, and seed papers' tables."""
