"""rankstudy: reproducible learning-to-rank experiments (Snakemake + MLflow).

One subpackage per stage of the workflow's DAG, layered bottom to top (import-linter
contract in pyproject.toml): ``util``, ``data``, ``features`` | ``evaluation``,
``losses`` | ``scorers``, ``solvers``, ``rankers``, ``tracking`` | ``reporting``, ``pipeline``.
"""

__version__ = "0.1.0"
