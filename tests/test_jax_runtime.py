"""JAX in one place (rankstudy.util.jax_runtime): one shape-bucket scheme for the attention scorer
and NeuralNDCG, float64 only inside their calls (the process's default untouched), and a
JAX_PLATFORMS this machine cannot honour ends in one line naming the variable."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

from losscheck import linear_signal_data
from rankstudy.util.jax_runtime import bucket


def test_one_bucket_scheme_pads_by_at_most_a_third():
    assert [bucket(n) for n in range(1, 14)] == [1, 2, 3, 4, 6, 6, 8, 8, 12, 12, 12, 12, 16]
    assert [bucket(n, 8) for n in (1, 8, 9, 13, 17, 100)] == [8, 8, 12, 16, 24, 128]
    sizes = np.arange(9, 5000)
    padded = np.array([bucket(n, 8) for n in sizes])
    assert np.all(padded >= sizes) and np.all((padded - sizes) / padded < 1 / 3 + 1e-12)


def test_float64_only_inside_the_calls():
    jax = pytest.importorskip("jax")
    from rankstudy.losses.registry import bind_loss
    from rankstudy.scorers.attention import AttentionScorer

    data = linear_signal_data(0, n_queries=3, n_features=3)
    before = jax.config.jax_enable_x64  # another test module may have switched it on for its process
    jax.config.update("jax_enable_x64", False)
    try:
        bound = AttentionScorer(d_model=4, n_blocks=1, d_ff=4).bind(data)
        theta = bound.initial(np.random.default_rng(0))
        scores, vjp = bound.forward(theta)
        grad = vjp(np.ones(len(scores)))
        value, loss_grad = bind_loss("neural_ndcg")(np.array([[0.3, -0.2, 0.1]]), np.array([[2.0, 0.0, 1.0]]),
                                                    np.ones((1, 3), bool))
        assert not jax.config.jax_enable_x64 and jax.numpy.asarray([1.0]).dtype == np.float32
    finally:
        jax.config.update("jax_enable_x64", before)
    # computed in float64: the same scores as with float64 switched on for the whole process
    assert scores.dtype == grad.dtype == loss_grad.dtype == np.float64 and np.isfinite(value)
    jax.config.update("jax_enable_x64", True)
    try:
        assert np.array_equal(bound.scores(theta), scores)
    finally:
        jax.config.update("jax_enable_x64", before)


@pytest.mark.parametrize("code", [
    "from rankstudy.losses.registry import bind_loss; import numpy as np; "
    "bind_loss('neural_ndcg')(np.array([[0.3, -0.2]]), np.array([[1.0, 0.0]]), np.ones((1, 2), bool))",
    "import sys, numpy as np; sys.path.insert(0, 'tests'); from losscheck import linear_signal_data; "
    "from rankstudy.scorers.attention import AttentionScorer; "
    "bound = AttentionScorer(d_model=4).bind(linear_signal_data(0, 2, 3)); "
    "bound.scores(bound.initial(np.random.default_rng(0)))",
], ids=["neural_ndcg", "attention"])
def test_a_jax_platform_the_machine_lacks_is_one_line_naming_jax_platforms(repo_root, code):
    env = {**os.environ, "JAX_PLATFORMS": "cuda"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=repo_root,
                         timeout=120)
    if out.returncode == 0:
        pytest.skip("this machine has a CUDA backend for JAX")
    last = out.stderr.strip().splitlines()[-1]
    assert last.startswith("rankstudy.util.jax_runtime.JaxPlatformError: JAX_PLATFORMS='cuda': JAX cannot start"), \
        out.stderr[-2000:]
    assert "unset JAX_PLATFORMS" in last
    from rankstudy.pipeline.errors import user_errors
    from rankstudy.util.jax_runtime import JaxPlatformError

    assert JaxPlatformError in user_errors()  # a job says it in one line, no traceback
