"""NeuralNDCG's Sinkhorn scaling: the vector form rankstudy uses against scaling the matrix itself.

Both forms run NeuralSort, ``--iterations`` rounds of column-then-row normalisation and the
relaxed DCG, with its gradient (JAX, float64, one jit each) on a batch of ``--queries`` queries
of ``--width`` documents (scores N(0, 3^2), a few queries shorter: padding):

* matrix: each round divides the (queries, width, width) matrix by its column and then its row
  sums (allRank's code; autodiff stores or, with ``jax.checkpoint``, recomputes every round's
  matrix);
* vector (``rankstudy.losses.neural_jax.sinkhorn``): the scaled matrix is diag(u) P diag(v) and a
  round only updates u and v (two batched matrix-vector products).

Printed per shape: the median milliseconds of one value-and-gradient of each, their ratio
(matrix / vector, same process) and the largest difference of the values and the gradients.

    PYTHONPATH=src python benchmarks/bench_sinkhorn.py [--shapes 16x128 16x48 4x16] [--iterations 50]
"""

from __future__ import annotations

import argparse
import time
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

from rankstudy.losses import neural_jax


def sinkhorn_matrix(p, slot_real, real, iterations):
    padding = ~slot_real[:, :, None] & ~real[:, None, :]
    p = jnp.where(padding, 1.0, p)

    @jax.checkpoint
    def step(m, _):
        m = m / jnp.maximum(m.sum(axis=1, keepdims=True), neural_jax.SINKHORN_EPS)
        m = m / jnp.maximum(m.sum(axis=2, keepdims=True), neural_jax.SINKHORN_EPS)
        return m, None

    p = jax.lax.scan(step, p, None, length=iterations)[0]
    return jnp.where(padding, 0.0, p)


def relaxed_dcg(s, g, real, iterations, scale):
    p, slot_real = neural_jax.neural_sort(s, real, 1.0)
    p = scale(p, slot_real, real, iterations)
    discount = 1.0 / jnp.log2(jnp.arange(s.shape[1]) + 2.0)
    return (jnp.einsum("bri,bi->br", p, g) * discount).sum()


@partial(jax.jit, static_argnames=("iterations", "scale"))
def value_and_grad(s, g, real, iterations, scale):
    return jax.value_and_grad(relaxed_dcg)(s, g, real, iterations, scale)


def median_ms(run, seconds: float = 2.0) -> float:
    run()  # compile
    times = []
    start = time.perf_counter()
    while time.perf_counter() - start < seconds or len(times) < 5:
        t = time.perf_counter()
        run()
        times.append(time.perf_counter() - t)
    return 1e3 * float(np.median(times))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--shapes", nargs="*", default=["16x128", "16x48", "4x16"], help="queries x width")
    parser.add_argument("--iterations", type=int, default=50)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    print(f"{'shape':>8} {'matrix ms':>10} {'vector ms':>10} {'ratio':>6} {'|d value|':>10} {'|d grad|':>10}")
    with neural_jax.float64():
        for shape in args.shapes:
            b, w = map(int, shape.split("x"))
            real = np.ones((b, w), dtype=bool)
            real[b // 2:, w // 2:] = False  # half the queries half as long
            s, g = rng.normal(size=(b, w)) * 3, rng.integers(0, 3, (b, w)).astype(float)
            s, g, real = jnp.asarray(s), jnp.asarray(g), jnp.asarray(real)
            out = {}
            for name, scale in [("matrix", sinkhorn_matrix), ("vector", neural_jax.sinkhorn)]:
                def run(scale=scale):
                    return [a.block_until_ready() for a in value_and_grad(s, g, real, args.iterations, scale)]
                out[name] = median_ms(run), *run()
            (tm, vm, gm), (tv, vv, gv) = out["matrix"], out["vector"]
            print(f"{shape:>8} {tm:10.2f} {tv:10.2f} {tm / tv:6.2f} {abs(float(vm - vv)):10.1e} "
                  f"{float(jnp.abs(gm - gv).max()):10.1e}")


if __name__ == "__main__":
    main()
