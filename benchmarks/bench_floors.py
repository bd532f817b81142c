"""Every stage of a benchmark run against its floor, each a ratio measured in the same run.

On one synthetic data set of ``--docs`` documents x ``--features`` features (float64;
query lengths uniform in 10..150, labels 0..4 from a noisy linear utility, as
``bench_losses.make_data``), each stage is timed beside the cheapest thing that any
implementation of it must do, in the same process, alternating the two so both see the same
background load (medians of ``--repeats``, after a warm-up):

1. a linear L-BFGS iteration (``LinearRanker.fit`` with ``tol=0`` divided by its iterations;
   and one ``Objective`` value + gradient alone) for ranknet and listnet, against two passes
   over X at the machine's memory bandwidth: 2 x the fastest streaming read of X
   (``np.add.reduce(X, axis=0)`` or ``X.sum()``), with ``X @ w`` + ``X.T @ v`` beside it.
   Target: within 2x.
2. the rho filter ``features.pairs.pair_correlations(X, y)`` against its three-GEMM floor
   X'X + X'(y.X) + (X.X)'(X.X) on the same X (inputs of the GEMMs built before timing).
   Target: within 2x.
3. parsing: ``data.letor.read_letor`` of a generated LETOR text file of ``--docs`` lines
   (``bench_parse.write_dense_file``) against ``np.fromfile`` of the parsed n x d float64
   matrix written with ``tofile`` (the same numbers, dense binary), and against reading the
   text's bytes alone. Both files were just written, so they are read from the page cache.
   Target: within 2x of the dense read.
4. metric evaluation ``evaluation.metrics.per_query`` (ndcg@10, map, mrr, p@10) against one
   sort of the scores per query: the faster of ``np.lexsort((-score, qid))`` and a stable
   ``argsort`` of the padded (Q, L) scores (padding done before timing). Target: within 2x.
5. a LambdaMART fit (``make_ranker("lambdamart", ...)`` on train + a validation split of
   ``--docs // 4`` documents from the same generator, ``--rounds`` rounds) against
   ``lightgbm.train`` alone with the ranker's own parameters, Datasets and validation sets
   (Dataset construction is lazy, so both include the binning), with 1 and with 2 threads
   (the ranker takes the job's threads, ``rankstudy.util.threads``; lgb.train the same
   ``num_threads``). Target: within 1.2x at each thread count.

BLAS runs with ``--blas-threads`` threads (default 1, via threadpoolctl) in stages 1-4, for
ours and the floors alike: on the shared 2-core machine two BLAS threads made both sides
slower and noisier. Prints one table: stage, ours (s), floor (s), ratio, target, met?

    PYTHONPATH=src python benchmarks/bench_floors.py [--docs 200000] [--features 136] [--stages 1 2 3 4 5]
"""

from __future__ import annotations

import argparse
import resource
import tempfile
import time
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits

from bench_losses import make_data
from bench_parse import write_dense_file
from rankstudy.data.blocks import pad
from rankstudy.data.letor import read_letor
from rankstudy.evaluation.metrics import per_query
from rankstudy.features.pairs import pair_correlations
from rankstudy.rankers.linear import LinearRanker
from rankstudy.rankers.registry import make_ranker
from rankstudy.util.threads import job_threads, use_job_threads

METRICS = ["ndcg@10", "map", "mrr", "p@10"]
ROWS: list[dict] = []


def timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def alternate(fns: dict, repeats: int, warmup: bool = True) -> dict[str, float]:
    """Median seconds of each callable, run in turns (a, b, a, b, ...) after one warm-up each."""
    if warmup:
        for fn in fns.values():
            fn()
    times: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(repeats):
        for name, fn in fns.items():
            times[name].append(timed(fn))
    return {name: float(np.median(t)) for name, t in times.items()}


def row(stage: str, ours: float, floor: float, target: float | None) -> None:
    ROWS.append({"stage": stage, "ours": ours, "floor": floor, "ratio": ours / floor, "target": target})
    met = "-" if target is None else ("yes" if ours / floor <= target else "NO")
    print(f"  {stage}: ours {ours:.4f} s, floor {floor:.4f} s, ratio {ours / floor:.2f} ({met})", flush=True)


def stage_lbfgs(data, args) -> None:
    X = data.X
    rng = np.random.default_rng(args.seed + 1)
    w, v = rng.normal(size=X.shape[1]), rng.normal(size=X.shape[0])
    t = alternate({"reduce": lambda: np.add.reduce(X, axis=0), "sum": X.sum,
                   "Xw": lambda: X @ w, "XTv": lambda: X.T @ v}, args.repeats * 3)
    stream = min(t["reduce"], t["sum"])
    two_passes = 2 * stream
    print(f"1. streaming read of X ({X.nbytes / 1e6:.0f} MB): add.reduce {t['reduce'] * 1e3:.2f} ms, "
          f"X.sum() {t['sum'] * 1e3:.2f} ms -> {X.nbytes / stream / 1e9:.1f} GB/s; "
          f"X @ w {t['Xw'] * 1e3:.2f} ms + X.T @ v {t['XTv'] * 1e3:.2f} ms = {(t['Xw'] + t['XTv']) * 1e3:.2f} ms; "
          f"floor = 2 passes = {two_passes * 1e3:.2f} ms")
    for loss in ("ranknet", "listnet"):
        objective = LinearRanker(loss=loss).objective(data)
        theta = 0.01 * rng.normal(size=objective.n_params)
        iters, fevs = [], []

        def fit() -> None:
            ranker = LinearRanker(loss=loss, max_iter=args.iters, tol=0.0)
            start = time.perf_counter()
            ranker.fit(data)
            iters.append((time.perf_counter() - start) / max(ranker.n_iter_, 1))
            fevs.append(ranker.n_fev_ / max(ranker.n_iter_, 1))

        # the fit is long enough not to need a warm-up; the objective gets one in alternate()
        padded = np.zeros(objective.shape)
        padded.flat[objective.flat] = X @ theta
        t_obj = alternate({"objective": lambda: objective(theta),
                           "loss": lambda: objective.loss(padded, objective.labels, objective.mask)}, args.repeats)
        obj_t = t_obj["objective"]
        for _ in range(args.repeats):
            fit()
        blas = t["Xw"] + t["XTv"]
        print(f"   {loss}: objective+gradient {obj_t * 1e3:.1f} ms ({obj_t / blas:.1f}x X @ w + X.T @ v), of which "
              f"the loss alone on the padded {objective.shape} scores {t_obj['loss'] * 1e3:.1f} ms; "
              f"L-BFGS {np.median(fevs):.2f} evaluations per iteration")
        row(f"1. L-BFGS iteration, {loss} (vs 2 passes over X)", float(np.median(iters)), two_passes, 2.0)
        row(f"1. objective+gradient, {loss} (vs 2 passes over X)", obj_t, two_passes, None)


def stage_rho(data, args) -> None:
    X, y = data.X, data.y
    XX, yX = X * X, y[:, None] * X
    t = alternate({"ours": lambda: pair_correlations(X, y),
                   "XtX": lambda: X.T @ X, "XtyX": lambda: X.T @ yX, "XXtXX": lambda: XX.T @ XX},
                  args.repeats)
    floor = t["XtX"] + t["XtyX"] + t["XXtXX"]
    print(f"2. GEMMs: X'X {t['XtX']:.3f} s, X'(y.X) {t['XtyX']:.3f} s, (X.X)'(X.X) {t['XXtXX']:.3f} s")
    row("2. rho filter pair_correlations (vs 3 GEMMs)", t["ours"], floor, 2.0)


def stage_parse(args) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        text = Path(tmp) / "dense.txt"
        start = time.perf_counter()
        write_dense_file(text, args.docs, args.features, seed=args.seed)
        written = time.perf_counter() - start
        parsed = read_letor(text)
        binary = Path(tmp) / "dense.f64"
        parsed.X.tofile(binary)
        shape = parsed.X.shape
        del parsed

        def read_bytes() -> None:
            with open(text, "rb") as f:
                f.read()

        t = alternate({"ours": lambda: read_letor(text),
                       "fromfile": lambda: np.fromfile(binary, dtype=np.float64).reshape(shape),
                       "bytes": read_bytes}, args.repeats, warmup=False)  # the read above warmed up
        print(f"3. text {text.stat().st_size / 1e6:.0f} MB (written in {written:.1f} s), "
              f"binary {binary.stat().st_size / 1e6:.0f} MB; both in the page cache")
    row("3. parse read_letor (vs np.fromfile of dense float64)", t["ours"], t["fromfile"], 2.0)
    row("3. parse read_letor (vs reading the text bytes)", t["ours"], t["bytes"], None)


def stage_metrics(data, args) -> None:
    rng = np.random.default_rng(args.seed + 2)
    scores = data.X @ rng.normal(size=data.n_features) * 0.3 + rng.normal(size=len(data.y))
    padded, mask = pad(-scores, data.offsets)
    padded[~mask] = np.inf
    t = alternate({"ours": lambda: per_query(scores, data.y, data.offsets, METRICS),
                   "lexsort": lambda: np.lexsort((-scores, data.qid)),
                   "argsort": lambda: np.argsort(padded, axis=1, kind="stable")}, args.repeats * 3)
    print(f"4. one sort per query: lexsort(-score, qid) {t['lexsort'] * 1e3:.1f} ms, "
          f"stable argsort of padded {padded.shape} {t['argsort'] * 1e3:.1f} ms; floor = the faster")
    row("4. metrics per_query ndcg@10,map,mrr,p@10 (vs 1 sort)", t["ours"], min(t["lexsort"], t["argsort"]), 2.0)


def stage_lambdamart(train, vali, args) -> None:
    import lightgbm as lgb

    params = {"n_estimators": args.rounds, "seed": args.seed}
    probe = make_ranker("lambdamart", params)
    lgb_params = probe.lightgbm_params(train, vali)
    # the ranker runs LightGBM on the job's threads (rankstudy.util.threads), as a train job does
    assert lgb_params["num_threads"] == job_threads() and "num_threads" not in probe.param_names()
    labels = {name: d.y.astype(np.int32) for name, d in (("train", train), ("vali", vali))}
    rounds: dict[str, list[int]] = {}

    def ours(threads: int):
        def run() -> None:
            use_job_threads(threads)
            try:
                ranker = make_ranker("lambdamart", params).fit(train, vali)
            finally:
                use_job_threads(1)
            rounds.setdefault(f"ours{threads}", []).append(len(ranker.history_))
        return run

    def floor(threads: int):
        def run() -> None:
            # the same Datasets and validation sets the ranker builds, without its callbacks
            dtrain = lgb.Dataset(train.X, label=labels["train"], group=train.query_lengths,
                                 params={"verbosity": -1})
            dvali = lgb.Dataset(vali.X, label=labels["vali"], group=vali.query_lengths, reference=dtrain)
            start = time.perf_counter()
            booster = lgb.train(dict(lgb_params, num_threads=threads), dtrain, num_boost_round=args.rounds,
                                valid_sets=[dtrain, dvali], valid_names=["train", "vali"],
                                callbacks=[lgb.early_stopping(probe.early_stopping_rounds, verbose=False)])
            times.setdefault(threads, []).append(time.perf_counter() - start)
            rounds.setdefault(f"lgb{threads}", []).append(booster.current_iteration())
        return run

    times: dict[int, list[float]] = {}
    # each fit runs for seconds: no warm-up; lgb.train's own time is taken inside run()
    t = alternate({"ours1": ours(1), "lgb1": floor(1), "ours2": ours(2), "lgb2": floor(2)}, args.lgb_repeats,
                  warmup=False)
    lgb1, lgb2 = float(np.median(times[1])), float(np.median(times[2]))
    print(f"5. rounds run (early stopping on vali NDCG@10 after {probe.early_stopping_rounds}): "
          + ", ".join(f"{k} {v}" for k, v in rounds.items()))
    row("5. LambdaMART fit, 1 job thread (vs lgb.train, 1 thread)", t["ours1"], lgb1, 1.2)
    row("5. LambdaMART fit, 2 job threads (vs lgb.train, 2 threads)", t["ours2"], lgb2, 1.2)
    row("5. LambdaMART fit, 2 job threads (vs ours, 1 thread)", t["ours2"], t["ours1"], None)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--docs", type=int, default=200_000)
    parser.add_argument("--features", type=int, default=136)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--iters", type=int, default=20, help="L-BFGS iterations per fit (stage 1)")
    parser.add_argument("--rounds", type=int, default=50, help="LambdaMART boosting rounds (stage 5)")
    parser.add_argument("--lgb-repeats", type=int, default=2, help="fits of each side in stage 5")
    parser.add_argument("--blas-threads", type=int, default=1, help="0: the library's default")
    parser.add_argument("--stages", type=int, nargs="+", default=[1, 2, 3, 4, 5])
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    wall = time.perf_counter()
    n_vali = args.docs // 4
    full = make_data(args.docs + n_vali, args.features, 10, 150, args.seed)
    in_train = full.offsets[1:] <= args.docs  # whole queries: train is about --docs documents
    data, vali = full.select_queries(in_train), full.select_queries(~in_train)
    del full
    print(f"data: {len(data.y):,} documents x {data.n_features} features float64 "
          f"({data.X.nbytes / 2**20:.0f} MiB), {data.n_queries:,} queries, padded {data.n_queries} x "
          f"{data.query_lengths.max()}; validation (stage 5) {len(vali.y):,} documents; "
          f"BLAS threads {args.blas_threads or 'default'}")

    limits = threadpool_limits(limits=args.blas_threads or None, user_api="blas")
    if 1 in args.stages:
        stage_lbfgs(data, args)
    if 2 in args.stages:
        stage_rho(data, args)
    if 3 in args.stages:
        stage_parse(args)
    if 4 in args.stages:
        stage_metrics(data, args)
    limits.restore_original_limits()
    if 5 in args.stages:
        stage_lambdamart(data, vali, args)

    width = max(len(r["stage"]) for r in ROWS)
    header = f"{'stage':<{width}}  {'ours (s)':>9}  {'floor (s)':>9}  {'ratio':>6}  {'target':>7}  met?"
    print("\n" + header + "\n" + "-" * len(header))
    for r in ROWS:
        target = "-" if r["target"] is None else f"<= {r['target']:g}x"
        met = "-" if r["target"] is None else ("yes" if r["ratio"] <= r["target"] else "NO")
        print(f"{r['stage']:<{width}}  {r['ours']:>9.4f}  {r['floor']:>9.4f}  {r['ratio']:>6.2f}  {target:>7}  {met}")
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20  # Linux: KiB
    print(f"\npeak RSS {peak:.2f} GiB; total {time.perf_counter() - wall:.0f} s")


if __name__ == "__main__":
    main()
