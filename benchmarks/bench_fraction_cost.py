"""What a fit on a share of the training queries costs against one on all of them (``tune.train_fraction``,
issue 43): a leaderboard method's reference candidate (bench_board_cost.py's) fitted on a fold of
bench_board_cost.py's synthetic data of a large benchmark's shape at 1/k, on the whole training split
and on each ``--fractions`` share of its queries (tuning's own seeded subsample,
:func:`rankstudy.selection.tuning.tuning_subsample`), fits alternating, ``--repeats`` times (the
median is reported); with ``--no-vali`` each also without the validation split (what evaluating it
every step costs). Reported per fit: CPU seconds, the steps it ran (rounds, epochs: its history),
CPU per step, and its share of the whole split's fit.

A step's CPU taken as a + b n over the training documents n, through the whole split and the
smallest share: a is what a step costs whatever its training data (a tree's split search over
every feature's bins, the library's per-round work, the validation split's scoring), the reason a
fifth of the queries costs more than a fifth of the CPU. With ``--no-vali`` the validation split's
part is told apart (the difference a step makes with it), and a prediction follows (not a
measurement): the share at the full fold's size (``--full-docs``, MSLR-WEB30K's 2,270,000
training documents), the validation split grown with the fold, as many steps as here.

    python benchmarks/bench_fraction_cost.py [--methods lambdamart xgb_ndcg mlp_softmax] [--shape mslr30k]
        [--size 32] [--fold 1] [--fractions 0.2 0.25] [--repeats 3] [--no-vali] [--threads 1]
        [--full-docs 2270000]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks"))

from bench_board_cost import candidates, data_dir, prepare, study_methods  # noqa: E402

from rankstudy.data.rankdata import RankData  # noqa: E402
from rankstudy.rankers.registry import make_ranker  # noqa: E402
from rankstudy.selection.spec import training_params  # noqa: E402
from rankstudy.selection.tuning import tuning_subsample  # noqa: E402
from rankstudy.util.threads import use_job_threads  # noqa: E402


def fit_cost(kind: str, params: dict, train: RankData, vali: RankData | None) -> tuple[float, int]:
    """CPU seconds of one fit (every thread of this process) and the steps it ran."""
    ranker = make_ranker(kind, params)
    start = time.process_time()
    ranker.fit(train, vali)
    return time.process_time() - start, len(ranker.history_)


def step_line(points: list[tuple[int, float]]) -> tuple[float, float]:
    """(a, b) of CPU per step = a + b n through the largest and the smallest n measured."""
    (n_small, c_small), (n_large, c_large) = min(points), max(points)
    b = (c_large - c_small) / (n_large - n_small)
    return c_small - b * n_small, b


def predicted_shares(a: float, b: float, v: float, docs: int, fractions: list[float]) -> dict[float, float]:
    """The CPU share of a fit on each fraction of a fold's training documents against one on them
    all, at ``docs`` training documents, a step costing a + b n + v: n the training documents (taken
    in proportion to the queries), ``v`` the validation split's part at that size (it grows with the
    fold, not with the fraction)."""
    return {f: (a + b * f * docs + v) / (a + b * docs + v) for f in fractions}


def measure(method: str, spec: dict, train: RankData, vali: RankData, args: argparse.Namespace) -> str:
    grid, reference = candidates(spec)
    params = {**training_params(spec, seed=0, rel_threshold=1), **grid[reference]}
    splits = {1.0: train, **{f: tuning_subsample(train, f, 0, method) for f in args.fractions}}
    arms = [(f, with_vali) for f in splits for with_vali in ((True, False) if args.no_vali else (True,))]
    runs: dict = {arm: [] for arm in arms}
    for repeat in range(args.repeats):
        for arm in arms if repeat % 2 == 0 else arms[::-1]:  # alternating: a drift of the machine hits both
            fraction, with_vali = arm
            runs[arm].append(fit_cost(spec["kind"], params, splits[fraction], vali if with_vali else None))
            print(f"  {method} fraction {fraction:g}{'' if with_vali else ', no vali'}: {runs[arm][-1][0]:.1f} CPU-s, "
                  f"{runs[arm][-1][1]} steps", file=sys.stderr)
    cpu = {arm: statistics.median(c for c, _ in runs[arm]) for arm in arms}
    steps = {arm: statistics.median(s for _, s in runs[arm]) for arm in arms}
    lines = [f"\n{method} ({spec['kind']}, {params}), the median of {args.repeats}:",
             "| training share | documents | validation | CPU-s | steps | ms a step | CPU share of the whole |",
             "|---|---|---|---|---|---|---|"]
    for arm in arms:
        fraction, with_vali = arm
        whole = cpu[(1.0, with_vali)]
        lines.append(f"| {fraction:g} | {len(splits[fraction].y):,} | {'yes' if with_vali else 'no'} | {cpu[arm]:.1f} | "
                     f"{steps[arm]:g} | {1000 * cpu[arm] / steps[arm]:.1f} | {cpu[arm] / whole:.2f} |")
    a, b = step_line([(len(splits[f].y), cpu[(f, True)] / steps[(f, True)]) for f in splits])
    at = {f: a + b * len(splits[f].y) for f in splits}
    lines.append(f"A step: {1000 * a:.1f} ms whatever its training data + {1e9 * b:.1f} ms per million training "
                 f"documents (the step's fixed part: {a / at[1.0]:.0%} of a step on the whole split, "
                 f"{a / at[min(args.fractions)]:.0%} on a {min(args.fractions):g} share).")
    if not args.no_vali:
        lines.append("(With --no-vali: the validation split's part of a step, and the share predicted at the full "
                     "fold, whose validation split grows with it.)")
        return "\n".join(lines)
    # without the validation split: the training part alone; the validation part is the difference
    a0, b0 = step_line([(len(splits[f].y), cpu[(f, False)] / steps[(f, False)]) for f in splits])
    v = statistics.median(cpu[(f, True)] / steps[(f, True)] - cpu[(f, False)] / steps[(f, False)] for f in splits)
    lines.append(f"Without the validation split: {1000 * a0:.1f} ms a step whatever its training data + "
                 f"{1e9 * b0:.1f} ms per million documents; the validation split's {len(vali.y):,} documents: "
                 f"{1000 * v:.1f} ms a step.")
    if b0 > 0:
        grown = v * args.full_docs / len(train.y)  # the validation split as large against the training split
        shares = ", ".join(f"{f:g}: {share:.2f}"
                           for f, share in predicted_shares(max(a0, 0.0), b0, grown, args.full_docs, args.fractions).items())
        lines.append(f"Predicted share at {args.full_docs:,} training documents (the validation split grown in "
                     f"proportion, as many steps as here): {shares}.")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--methods", nargs="+", default=["lambdamart", "xgb_ndcg", "mlp_softmax"])
    parser.add_argument("--study", type=Path, default=REPO / "config" / "studies" / "leaderboard.yaml")
    parser.add_argument("--shape", default="mslr30k", choices=["mslr30k", "yahoo", "istella"])
    parser.add_argument("--size", type=int, default=32, help="1/size of a fold's queries")
    parser.add_argument("--fold", type=int, default=1, help="the fold of the synthetic rotation")
    parser.add_argument("--fractions", type=float, nargs="+", default=[0.2, 0.25])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--no-vali", action="store_true", help="each fit also without the validation split")
    parser.add_argument("--full-docs", type=int, default=2_270_000, help="training documents of the full fold")
    parser.add_argument("--threads", type=int, default=1, help="the fits' threads (BLAS, OpenMP, LightGBM), as a job's")
    parser.add_argument("--workdir", type=Path, default=Path(tempfile.gettempdir()) / "board-cost")
    args = parser.parse_args()
    use_job_threads(args.threads)  # as a train job with these threads: no library spinning idle threads
    if bad := [f for f in args.fractions if not 0 < f < 1]:
        parser.error(f"--fractions: {bad[0]} is not a share of the queries (0 < F < 1)")
    prepare(args.workdir, args.shape, args.size, fold=args.fold)
    folder = data_dir(args.workdir, args.shape, args.size, args.fold)
    train, vali = (RankData.from_npz(folder / f"{split}.npz") for split in ("train", "vali"))
    print(f"{args.shape} 1/{args.size} fold {args.fold}: {train.n_queries:,} training queries, {len(train.y):,} "
          f"documents; validation {vali.n_queries:,} queries, {len(vali.y):,} documents")
    specs = study_methods(args.study, args.methods)
    for method in args.methods:
        print(measure(method, specs[method], train, vali, args), flush=True)


if __name__ == "__main__":
    main()
