"""rankstudy: reproducible learning-to-rank experiments (Snakemake + MLflow)."""

__version__ = "0.1.0"
