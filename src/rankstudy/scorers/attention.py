"""allRank's context-aware scorer (Pobrotyn et al. 2020): every document of a query scored in the
context of the others, by self-attention over the query's documents.

    h_0 = act(x W_in + b_in)                      per document, d_model wide (dropout after)
    h_k = h_{k-1} + drop(MHA(LN(h_{k-1})))        N encoder blocks, pre-norm as allRank's
    h_k = h_k + drop(FF(LN(h_k)))                 SublayerConnection; FF = W2 act(W1 . + b1) + b2
    s   = LN(h_N) w_out + b_out

MHA is multi-head scaled dot-product attention over the documents of one query (``n_heads``
heads of d_model / n_heads), the padding masked out of the keys; no positional encoding (the
documents of a query are a set). Dropout (``dropout``) after the input layer, on the attention
weights and on each sublayer's output, only in ``train_forward``.

The network is written in JAX and its vjp is ``jax.vjp``; the boundary stays numpy (theta in,
scores and gradients out), so every numpy loss trains it. JAX is imported on the first
forward pass (:func:`_jax`), so a job that never scores with attention never imports it. It runs
in float64 (each call into JAX inside :func:`rankstudy.util.jax_runtime.float64`; the process's
default is left alone), on whatever device JAX has (a GPU with ``jax[cuda12]``).

A bound split is padded to (Q, L) per call, Q and L rounded up to the shape buckets of
:func:`rankstudy.util.jax_runtime.bucket` so that ``jax.jit`` compiles a few shapes only; the
padding rows are masked (an all-padding query gets uniform attention over its padding, and its
scores are dropped). Prediction scores whole queries in chunks of at most ``CHUNK_DOCS`` padded
documents.

``input_transform`` and ``input_noise``: DASALC's input tricks (:mod:`rankstudy.scorers.inputs`).

theta: every matrix first (penalised), then the biases and layer-norm gains and offsets (not
penalised), in the order of :meth:`AttentionScorer.layout`. Weights start Glorot-normal (He for
the input layer's ReLU family), layer-norm gains at 1, biases at 0.
"""

from __future__ import annotations

from functools import cache
from typing import Any

import numpy as np

from rankstudy.scorers import inputs
from rankstudy.scorers.base import BoundScorer, Scorer, Vjp
from rankstudy.util.jax_runtime import bucket, float64, load_jax
from rankstudy.util.params import Choice, Choices, Integer, IntRange, Param, ParamError, Real, Uniform, defaults

ACTIVATIONS = ("relu", "gelu", "tanh")
# the scorer's settings, declared once: the neural ranker takes them as its parameters and checks
# them (and check_relations); every choice of d_model is a multiple of every choice of n_heads
PARAMETERS = {
    "d_model": Param(Integer(1), 64, space=Choices([32, 64, 128])),
    "n_blocks": Param(Integer(1), 2, space=IntRange(1, 4)),
    "n_heads": Param(Integer(1), 1, space=Choices([1, 2, 4])),
    "d_ff": Param(Integer(1), 128, space=Choices([64, 128, 256])),
    "activation": Param(Choice(ACTIVATIONS, "attention activation"), "relu"),
    "dropout": Param(Real(0, 1, high_open=True), 0.0, space=Uniform(0.0, 0.5)),
    **inputs.PARAMETERS,
}
DEFAULTS = defaults(PARAMETERS)
LN_EPS = 1e-5
CHUNK_DOCS = 1 << 16
NEG = -1e9  # a masked key's attention logit (-inf would make an all-padding row NaN)


def check_relations(params: dict) -> None:
    """ParamError when valid settings do not fit together: the heads split d_model evenly."""
    if params["d_model"] % params["n_heads"]:
        raise ParamError("n_heads", f"d_model ({params['d_model']}) must be a multiple of n_heads ({params['n_heads']})")


@cache
def _jax():
    """(jax.numpy, the jitted network and its jitted vjp, PRNGKey): JAX imported on first use
    (called inside :func:`float64`, so they run in float64)."""
    jax = load_jax()
    jnp = jax.numpy

    def _act(name: str, z):
        if name == "relu":
            return jax.nn.relu(z)
        if name == "gelu":
            return jax.nn.gelu(z, approximate=False)
        return jnp.tanh(z)

    def _layer_norm(x, gain, offset):
        mean = x.mean(axis=-1, keepdims=True)
        var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
        return (x - mean) / jnp.sqrt(var + LN_EPS) * gain + offset

    def _dropout(x, p: float, key):
        if key is None or p == 0.0:
            return x
        keep = jax.random.bernoulli(key, 1.0 - p, x.shape)
        return jnp.where(keep, x / (1.0 - p), 0.0)

    def _network(theta, X, mask, key, config):
        """Scores (Q, L) of padded documents X (Q, L, m) with mask (Q, L); ``key`` None: no dropout."""
        layout, n_blocks, n_heads, activation, p = config
        params = {}
        for name, start, shape in layout:
            params[name] = theta[start:start + int(np.prod(shape))].reshape(shape)
        keys = list(jax.random.split(key, 1 + 3 * n_blocks)) if key is not None else [None] * (1 + 3 * n_blocks)
        h = _dropout(_act(activation, X @ params["in_W"] + params["in_b"]), p, keys[0])
        Q, L, d = h.shape
        dh = d // n_heads
        key_mask = jnp.where(mask, 0.0, NEG)[:, None, None, :]  # (Q, 1, 1, L): padding is no key
        for k in range(n_blocks):
            b = f"block{k}_"
            x = _layer_norm(h, params[b + "ln1_g"], params[b + "ln1_b"])

            def heads(t):
                return t.reshape(Q, L, n_heads, dh).transpose(0, 2, 1, 3)  # (Q, H, L, dh)

            q = heads(x @ params[b + "Wq"] + params[b + "bq"])
            kk = heads(x @ params[b + "Wk"] + params[b + "bk"])
            v = heads(x @ params[b + "Wv"] + params[b + "bv"])
            attention = jax.nn.softmax(q @ kk.transpose(0, 1, 3, 2) / np.sqrt(dh) + key_mask, axis=-1)
            attention = _dropout(attention, p, keys[1 + 3 * k])
            mixed = (attention @ v).transpose(0, 2, 1, 3).reshape(Q, L, d)
            h = h + _dropout(mixed @ params[b + "Wo"] + params[b + "bo"], p, keys[2 + 3 * k])
            x = _layer_norm(h, params[b + "ln2_g"], params[b + "ln2_b"])
            ff = _act(activation, x @ params[b + "W1"] + params[b + "b1"]) @ params[b + "W2"] + params[b + "b2"]
            h = h + _dropout(ff, p, keys[3 + 3 * k])
        h = _layer_norm(h, params["ln_g"], params["ln_b"])
        return (h @ params["out_W"])[..., 0] + params["out_b"][0]

    def _pullback(theta, X, mask, key, config, g):
        return jax.vjp(lambda t: _network(t, X, mask, key, config), theta)[1](g)[0]

    # the vjp is its own compiled function (forward again, then backward): jax.vjp of a jitted
    # call outside jit would trace and compile anew on every call
    return (jnp, jax.jit(_network, static_argnames=("config",)),
            jax.jit(_pullback, static_argnames=("config",)), jax.random.PRNGKey)


class BoundAttention(BoundScorer):
    def __init__(self, X: np.ndarray, segment: np.ndarray, scorer: "AttentionScorer") -> None:
        self.X, self.segment, self.scorer = X, segment, scorer
        self.layout, self.n_penalized, self.n_params = scorer.layout(X.shape[1])
        # queries: runs of equal segment ids (rows of a query are contiguous)
        change = np.flatnonzero(np.diff(segment)) + 1
        self.offsets = np.concatenate([[0], change, [len(segment)]]).astype(np.int64)

    def features(self, rows: np.ndarray) -> np.ndarray:
        """``rows`` of the bound features (float32 or float64) as the network sees them (float64)."""
        return inputs.transform(rows, self.scorer.input_transform)

    def rows(self, rows: np.ndarray) -> "BoundAttention":
        return BoundAttention(self.X[rows], self.segment[rows], self.scorer)

    def config(self, train: bool) -> tuple:
        s = self.scorer
        return (tuple((name, start, shape) for name, start, shape, _ in self.layout), s.n_blocks, s.n_heads,
                s.activation, s.dropout if train else 0.0)

    def initial(self, rng: np.random.Generator) -> np.ndarray:
        theta = np.zeros(self.n_params)
        for name, start, shape, kind in self.layout:
            size = int(np.prod(shape))
            if kind == "weight":
                he = name == "in_W" and self.scorer.activation != "tanh"
                std = np.sqrt(2.0 / shape[0]) if he else np.sqrt(2.0 / (shape[0] + shape[1]))
                theta[start:start + size] = rng.normal(0.0, std, size)
            elif kind == "gain":
                theta[start:start + size] = 1.0
        return theta

    def _padded(self, first: int, stop: int, rows: np.ndarray):
        """Queries first..stop-1 padded, from ``rows``, their features as the network sees them:
        X (Qb, Lb, m), mask, and the flat index of each row."""
        offsets = self.offsets[first:stop + 1]
        lengths = np.diff(offsets)
        Qb, Lb = bucket(len(lengths), 1), bucket(int(lengths.max()), 8)
        within = np.arange(offsets[-1] - offsets[0]) - np.repeat(offsets[:-1] - offsets[0], lengths)
        flat = np.repeat(np.arange(len(lengths)), lengths) * Lb + within
        X = np.zeros((Qb * Lb, self.X.shape[1]))
        X[flat] = rows
        mask = np.zeros(Qb * Lb, dtype=bool)
        mask[flat] = True
        return X.reshape(Qb, Lb, -1), mask.reshape(Qb, Lb), flat

    def _run(self, theta: np.ndarray, rng: np.random.Generator | None) -> tuple[np.ndarray, Vjp]:
        theta = self.check(theta)
        rows = inputs.add_noise(self.features(self.X), self.scorer.input_noise, rng)
        X, mask, flat = self._padded(0, len(self.offsets) - 1, rows)
        draw = None if rng is None or self.scorer.dropout == 0 else int(rng.integers(2 ** 31))
        config = self.config(rng is not None)
        with float64():
            jnp, network, pullback, prng_key = _jax()
            key = None if draw is None else prng_key(draw)
            padded = network(jnp.asarray(theta), X, mask, key, config)
            scores = np.asarray(padded).ravel()[flat]

        def vjp(g: np.ndarray) -> np.ndarray:
            full = np.zeros(padded.size)
            full[flat] = g
            with float64():
                # a copy: numpy views of JAX arrays are read-only, and the objective adds its penalty in place
                return np.array(pullback(jnp.asarray(theta), X, mask, key, config, full.reshape(padded.shape)),
                                dtype=np.float64)

        return scores, vjp

    def forward(self, theta: np.ndarray) -> tuple[np.ndarray, Vjp]:
        return self._run(theta, None)

    def train_forward(self, theta: np.ndarray, rng: np.random.Generator) -> tuple[np.ndarray, Vjp]:
        return self._run(theta, rng)

    def scores(self, theta: np.ndarray) -> np.ndarray:
        theta = self.check(theta)
        config = self.config(False)
        out, first, n_queries = [], 0, len(self.offsets) - 1
        with float64():
            jnp, network, _, _ = _jax()
            theta = jnp.asarray(theta)
            while first < n_queries:  # whole queries, about CHUNK_DOCS padded documents at a time
                width = bucket(int(np.diff(self.offsets[first:]).max()), 8)
                stop = min(n_queries, first + max(1, CHUNK_DOCS // width))
                X, mask, flat = self._padded(first, stop, self.features(self.X[self.offsets[first]:self.offsets[stop]]))
                out.append(np.asarray(network(theta, X, mask, None, config)).ravel()[flat])
                first = stop
        return np.concatenate(out) if out else np.zeros(0)

    def unpack(self, theta: np.ndarray) -> dict[str, Any]:
        theta = self.check(theta)
        return {name: theta[start:start + int(np.prod(shape))].reshape(shape).tolist()
                for name, start, shape, _ in self.layout}


class AttentionScorer(Scorer):
    """See the module docstring: ``d_model`` wide, ``n_blocks`` encoder blocks of ``n_heads``
    heads and a ``d_ff``-wide feed-forward layer, ``activation``, ``dropout``."""

    name = "attention"
    parameters = PARAMETERS

    def __init__(self, d_model: int = DEFAULTS["d_model"], n_blocks: int = DEFAULTS["n_blocks"],
                 n_heads: int = DEFAULTS["n_heads"], d_ff: int = DEFAULTS["d_ff"],
                 activation: str = DEFAULTS["activation"], dropout: float = DEFAULTS["dropout"],
                 input_transform: str = DEFAULTS["input_transform"], input_noise: float = DEFAULTS["input_noise"]) -> None:
        # the settings are checked against PARAMETERS and check_relations by the ranker that builds the scorer
        self.d_model, self.n_blocks, self.n_heads, self.d_ff = d_model, n_blocks, n_heads, d_ff
        self.activation, self.dropout = activation, dropout
        self.input_transform, self.input_noise = input_transform, input_noise

    def layout(self, n_features: int) -> tuple[list[tuple[str, int, tuple, str]], int, int]:
        """[(name, start, shape, kind)], the number penalised, the number of parameters; kinds:
        weight (penalised), bias, gain (a layer norm's, starts at 1)."""
        d, f = self.d_model, self.d_ff
        weights = [("in_W", (n_features, d))]
        rest = [("in_b", (d,), "bias")]
        for k in range(self.n_blocks):
            b = f"block{k}_"
            weights += [(b + "Wq", (d, d)), (b + "Wk", (d, d)), (b + "Wv", (d, d)), (b + "Wo", (d, d)),
                        (b + "W1", (d, f)), (b + "W2", (f, d))]
            rest += [(b + n, (d,), "bias") for n in ("bq", "bk", "bv", "bo")]
            rest += [(b + "ln1_g", (d,), "gain"), (b + "ln1_b", (d,), "bias"), (b + "ln2_g", (d,), "gain"),
                     (b + "ln2_b", (d,), "bias"), (b + "b1", (f,), "bias"), (b + "b2", (d,), "bias")]
        weights.append(("out_W", (d, 1)))
        rest += [("ln_g", (d,), "gain"), ("ln_b", (d,), "bias"), ("out_b", (1,), "bias")]
        layout, at = [], 0
        for name, shape in weights:
            layout.append((name, at, shape, "weight"))
            at += int(np.prod(shape))
        penalized = at
        for name, shape, kind in rest:
            layout.append((name, at, shape, kind))
            at += int(np.prod(shape))
        return layout, penalized, at

    def bind(self, data) -> BoundAttention:
        self.check_kind(data)
        segment = np.repeat(np.arange(data.n_queries), np.diff(data.offsets))
        return BoundAttention(data.X, segment, self)  # transformed a batch or chunk at a time, as it runs

    def pack(self, parts: dict[str, Any]) -> np.ndarray:
        layout, _, n = self.layout(self.feature_shape(parts)[0])
        theta = np.empty(n)
        for name, start, shape, _ in layout:
            value = np.asarray(parts.get(name), dtype=np.float64)
            if value.shape != shape:
                raise ValueError(f"saved attention parameter {name} has shape {value.shape}, expected {shape}")
            theta[start:start + value.size] = value.ravel()
        return theta

    def feature_shape(self, parts: dict[str, Any]) -> tuple[int, ...]:
        return (len(parts["in_W"]),)
