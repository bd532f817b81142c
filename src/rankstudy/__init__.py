"""rankstudy: reproducible learning-to-rank experiments (Snakemake + MLflow).

One subpackage per stage of the workflow's DAG, layered bottom to top (import-linter
contract in pyproject.toml): ``util``, ``data``, ``features`` | ``evaluation``,
``losses`` | ``scorers``, ``solvers``, ``rankers``, ``tracking`` | ``reporting``, ``pipeline``.
"""

__version__ = "0.1.0"

# A job script's first rankstudy import: from here on a memory error that ends it, even numpy
# failing to load before the job's own error handling starts, is followed by a line saying so.
from rankstudy.util.memory import explain_memory_errors_of_jobs  # noqa: E402

explain_memory_errors_of_jobs()
