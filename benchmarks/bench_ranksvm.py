"""Pairwise RankSVM: rankstudy's linear ranker against scikit-learn's LinearSVC on pair differences.

The recipe users know (e.g. Herbrich et al.; Joachims 2002): within each query, every pair
of documents with different labels becomes one example x_i - x_j, labelled by the sign of
y_i - y_j, and a linear SVM without intercept is trained on them. Here the pairs are built
vectorised per query (much faster than the usual ``itertools.combinations`` loop, so the
baseline is not handicapped), every second pair is negated (with label -1) so that both
classes occur and each pair counts once, and ``LinearSVC(C, loss="squared_hinge",
fit_intercept=False)`` is fitted with its other defaults (tol 1e-4, dual="auto", which
picks liblinear's primal solver for many pairs).

Ours: ``make_ranker("linear", {"loss": "ranksvm", "l2": l2}).fit(train)`` (L-BFGS, default
max_iter 200 and tol 1e-6), which never builds the pairs: the squared hinge is summed over
the pairs of the padded (Q, L) scores. The two objectives are the same problem:

    ours:       (1/Q') sum_q sum_{pairs of q} max(0, 1 - w'(x_i - x_j))^2 + l2/2 ||w||^2
    LinearSVC:  1/2 ||w||^2 + C sum_{pairs} max(0, 1 - w'(x_i - x_j))^2

(Q' = queries with at least one pair), so ours / l2 is LinearSVC's objective with
C = 1 / (l2 Q'). The grid is given in l2 (``--l2``) and LinearSVC gets the matching C;
the table shows both, and each solution's value of our objective (equal to rounding when
both solvers converge). ``--svc-loss hinge`` trains LinearSVC on the plain hinge instead
(then C is the same mapping, but the problems differ).

Data (each optional): MQ2008 Fold1 (train/vali/test read with ``read_letor`` from the
shared data directory; skipped with a message when absent) and a synthetic set from
``data.synthetic.make_parts`` (``--queries`` queries, about 100k documents by default, fold 1
of its five parts: 60% train, 20% vali, 20% test). Features are z-scored with training
statistics (``features.normalize.Normalizer``, the pipeline's default) before either side
sees them; this and the evaluation are not timed.

Timed: ours = the fit; LinearSVC = building the pair-difference matrix (once per data set)
+ each fit. Every fit runs ``--repeats`` times, ours and LinearSVC alternating, and the
median is reported. Headline, "time to equal validation NDCG@10": with T = max(best
validation NDCG@10 of ours, of LinearSVC) - ``--tolerance`` (0.005), each side's time is
its fastest candidate reaching T (LinearSVC's including the pair build); the ratio
LinearSVC / ours should be >= 10. The whole grid's times are compared too. Test NDCG@10 is
given for each side's best validation candidate. BLAS runs with ``--blas-threads`` threads
(default 1, as liblinear, which is single-threaded; on the shared 2-core machine two BLAS
threads also made ours slower and noisier).

    PYTHONPATH=src python benchmarks/bench_ranksvm.py [--queries 2300] [--l2 0.01 0.1 1 10 100 1000]
"""

from __future__ import annotations

import argparse
import os
import resource
import time
import warnings
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits

from rankstudy.data.letor import read_letor
from rankstudy.data.rankdata import RankData
from rankstudy.data.rotation import fold_splits
from rankstudy.data.synthetic import make_parts
from rankstudy.evaluation.metrics import per_query
from rankstudy.features.normalize import Normalizer
from rankstudy.rankers.registry import make_ranker

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = Path(os.environ.get("RANKSTUDY_SHARED_DATA", REPO.parent / "shared" / "data"))


def pair_differences(data: RankData) -> tuple[np.ndarray, np.ndarray, int]:
    """(x_i - x_j for every within-query pair with y_i > y_j, every second one negated;
    labels +-1; the number of queries with at least one pair)."""
    first, second, active = [], [], 0
    for start, stop in zip(data.offsets[:-1].tolist(), data.offsets[1:].tolist()):
        y = data.y[start:stop]
        i, j = np.nonzero(y[:, None] > y[None, :])
        if len(i):
            first.append(i + start)
            second.append(j + start)
            active += 1
    i, j = np.concatenate(first), np.concatenate(second)
    diff = data.X[i] - data.X[j]
    sign = np.ones(len(i))
    sign[1::2] = -1.0
    diff[1::2] *= -1.0
    return diff, sign, active


def ndcg10(data: RankData, scores: np.ndarray) -> float:
    return float(per_query(scores, data.y, data.offsets, ["ndcg@10"])["ndcg@10"].mean())


def timed(fn):
    start = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - start


def run(name: str, splits: dict[str, RankData], args) -> dict:
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.svm import LinearSVC

    norm = Normalizer("zscore").fit(splits["train"])
    train, vali, test = (norm.transform(splits[s]) for s in ("train", "vali", "test"))
    build_times = []
    for _ in range(args.repeats):
        (diff, sign, q_active), t = timed(lambda: pair_differences(train))
        build_times.append(t)
    build = float(np.median(build_times))
    print(f"\n== {name}: train {len(train.y):,} documents / {train.n_queries} queries "
          f"({q_active} with a pair) x {train.n_features} features; vali {len(vali.y):,}, "
          f"test {len(test.y):,}; {len(sign):,} pairs ({diff.nbytes / 2**20:.0f} MiB), built in {build:.3f} s")
    objective = make_ranker("linear", {"loss": "ranksvm", "l2": 1.0}).objective(train)

    rows = []
    for l2 in args.l2:
        C = 1.0 / (l2 * q_active)
        ours_t, svc_t, warned = [], [], False
        for _ in range(args.repeats):
            ours, t = timed(lambda: make_ranker("linear", {"loss": "ranksvm", "l2": l2}).fit(train))
            ours_t.append(t)
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always", ConvergenceWarning)
                svc, t = timed(lambda: LinearSVC(C=C, loss=args.svc_loss, fit_intercept=False,
                                                 random_state=0).fit(diff, sign))
            warned |= any(issubclass(w.category, ConvergenceWarning) for w in caught)
            svc_t.append(t)
        w_ours, w_svc = ours.theta_, svc.coef_.ravel()
        objective.l2 = l2
        r = {"l2": l2, "C": C, "ours_s": float(np.median(ours_t)), "svc_s": float(np.median(svc_t)),
             "ours_iter": ours.n_iter_, "svc_iter": int(np.max(svc.n_iter_)), "svc_warned": warned,
             "ours_obj": objective(w_ours, need_grad=False)[0], "svc_obj": objective(w_svc, need_grad=False)[0],
             "ours_vali": ndcg10(vali, vali.X @ w_ours), "svc_vali": ndcg10(vali, vali.X @ w_svc),
             "ours_test": ndcg10(test, test.X @ w_ours), "svc_test": ndcg10(test, test.X @ w_svc)}
        rows.append(r)
        print(f"  l2 {l2:g} (C {C:.3g}): ours {r['ours_s']:.3f} s vali {r['ours_vali']:.4f}; "
              f"LinearSVC {r['svc_s']:.3f} s vali {r['svc_vali']:.4f}", flush=True)

    c_column = "C=1/(l2 Q')"
    header = (f"{'l2':>8} {c_column:>13} | {'ours s':>7} {'iter':>4} {'objective':>11} {'vali':>6} | "
              f"{'SVC fit s':>9} {'iter':>4} {'objective':>11} {'vali':>6} | {'fit ratio':>9}")
    print("\n" + header + "\n" + "-" * len(header))
    for r in rows:
        note = " (ConvergenceWarning)" if r["svc_warned"] else ""
        print(f"{r['l2']:>8g} {r['C']:>13.3g} | {r['ours_s']:>7.3f} {r['ours_iter']:>4} {r['ours_obj']:>11.6g} "
              f"{r['ours_vali']:>6.4f} | {r['svc_s']:>9.3f} {r['svc_iter']:>4} {r['svc_obj']:>11.6g} "
              f"{r['svc_vali']:>6.4f} | {r['svc_s'] / r['ours_s']:>8.1f}x{note}")
    print(f"(objective: ours, l2 at that row, evaluated at each solution; SVC time excludes the pair build, "
          f"{build:.3f} s; fit ratio = SVC fit / ours)")

    best_ours = max(rows, key=lambda r: r["ours_vali"])
    best_svc = max(rows, key=lambda r: r["svc_vali"])
    target = max(best_ours["ours_vali"], best_svc["svc_vali"]) - args.tolerance
    reach_ours = [r["ours_s"] for r in rows if r["ours_vali"] >= target]
    reach_svc = [build + r["svc_s"] for r in rows if r["svc_vali"] >= target]
    grid_ours = sum(r["ours_s"] for r in rows)
    grid_svc = build + sum(r["svc_s"] for r in rows)
    print(f"best validation NDCG@10: ours {best_ours['ours_vali']:.4f} (l2 {best_ours['l2']:g}, test "
          f"{best_ours['ours_test']:.4f}); LinearSVC {best_svc['svc_vali']:.4f} (C {best_svc['C']:.3g}, test "
          f"{best_svc['svc_test']:.4f})")
    t_ours = min(reach_ours) if reach_ours else float("inf")
    t_svc = min(reach_svc) if reach_svc else float("inf")
    if reach_ours and reach_svc:
        ratio, shown = t_svc / t_ours, f"{t_svc / t_ours:.1f}x"
    elif reach_ours:  # LinearSVC never got there: its whole grid is a lower bound
        ratio, shown = grid_svc / t_ours, f">= {grid_svc / t_ours:.1f}x (LinearSVC never reached T)"
    else:
        ratio, shown = t_svc / grid_ours, f"<= {t_svc / grid_ours:.1f}x (ours never reached T)"
    print(f"time to equal validation NDCG@10 (T = {target:.4f}): ours {t_ours:.3f} s, LinearSVC "
          f"{t_svc:.3f} s incl. pairs -> ours {shown} faster; target >= 10x: {'met' if ratio >= 10 else 'NOT met'}")
    print(f"whole grid ({len(rows)} candidates): ours {grid_ours:.3f} s, LinearSVC {grid_svc:.3f} s incl. pairs "
          f"-> {grid_svc / grid_ours:.1f}x")
    return {"name": name, "rows": rows, "ratio": ratio, "shown": shown, "target": target, "t_ours": t_ours,
            "t_svc": t_svc, "grid_ours": grid_ours, "grid_svc": grid_svc,
            "test_ours": best_ours["ours_test"], "test_svc": best_svc["svc_test"],
            "vali_ours": best_ours["ours_vali"], "vali_svc": best_svc["svc_vali"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--l2", type=float, nargs="+", default=[0.01, 0.1, 1.0, 10.0, 100.0, 1000.0])
    parser.add_argument("--queries", type=int, default=2300, help="synthetic queries (2300: about 100k documents)")
    parser.add_argument("--features", type=int, default=46, help="synthetic features")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--tolerance", type=float, default=0.005)
    parser.add_argument("--svc-loss", choices=["squared_hinge", "hinge"], default="squared_hinge")
    parser.add_argument("--data", nargs="+", choices=["mq2008", "synthetic"], default=["mq2008", "synthetic"])
    parser.add_argument("--blas-threads", type=int, default=1,
                        help="BLAS threads for ours (liblinear is single-threaded); 0: the library's default")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    limits = threadpool_limits(limits=args.blas_threads or None, user_api="blas")

    import sklearn
    print(f"scikit-learn {sklearn.__version__}; LinearSVC(loss={args.svc_loss!r}, fit_intercept=False); "
          f"{args.repeats} repeats per fit, medians; BLAS threads {args.blas_threads or 'default'}")
    wall = time.perf_counter()
    results = []
    if "mq2008" in args.data:
        fold = SHARED_DATA / "MQ2008" / "Fold1"
        files = {s: fold / f"{s}.txt.gz" for s in ("train", "vali", "test")}
        if all(p.exists() for p in files.values()):
            results.append(run("MQ2008 Fold1", {s: read_letor(p, n_features=46) for s, p in files.items()}, args))
        else:
            print(f"\nMQ2008 Fold1 not found under {fold}; skipped")
    if "synthetic" in args.data:
        parts = make_parts(args.seed, n_queries=args.queries, n_features=args.features)
        total = sum(len(p.y) for p in parts)
        results.append(run(f"synthetic ({total:,} documents, fold 1)", fold_splits(parts, 1), args))

    header = (f"{'data':<38} {'T':>6} {'ours s':>7} {'SVC s':>7} {'ratio':>7} {'grid ratio':>10} "
              f"{'test ours':>9} {'test SVC':>8}  target >= 10x")
    print("\n" + header + "\n" + "-" * len(header))
    for r in results:
        print(f"{r['name']:<38} {r['target']:>6.4f} {r['t_ours']:>7.3f} {r['t_svc']:>7.3f} {r['ratio']:>6.1f}x "
              f"{r['grid_svc'] / r['grid_ours']:>9.1f}x {r['test_ours']:>9.4f} {r['test_svc']:>8.4f}  "
              f"{'met' if r['ratio'] >= 10 else 'NOT met'}")
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20  # Linux: KiB
    print(f"\npeak RSS {peak:.2f} GiB; total {time.perf_counter() - wall:.0f} s")
    limits.restore_original_limits()


if __name__ == "__main__":
    main()
