"""A job's thread count reaches BLAS and OpenMP whether they were loaded before it was set
or after (a library loaded later reads the environment)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

SCRIPT = """
import json, numpy
from rankstudy.util.threads import job_threads, use_job_threads
use_job_threads({n})
import scipy.optimize, sklearn.linear_model  # SciPy's own OpenBLAS and scikit-learn's OpenMP, loaded after
from threadpoolctl import threadpool_info
print(json.dumps({{"job": job_threads(), "libraries": [[i["filepath"], i["num_threads"]] for i in threadpool_info()]}}))
"""


@pytest.mark.parametrize("n", [1, 2])
def test_libraries_loaded_before_and_after_use_the_job_threads(n):
    out = subprocess.run([sys.executable, "-c", SCRIPT.format(n=n)], capture_output=True, text=True, check=True)
    found = json.loads(out.stdout)
    assert found["job"] == n
    assert len(found["libraries"]) >= 2  # numpy's and SciPy's OpenBLAS at least
    assert {threads for _, threads in found["libraries"]} == {n}, found["libraries"]
