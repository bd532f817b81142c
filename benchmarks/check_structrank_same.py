"""Same seed, same model: fit the study's ``structrank`` method (the leaderboard's by default) on
one fold of a real LETOR data set, prepared as the pipeline prepares it (``learn-check``'s cached
fold), and save its parameters (bandwidths, CDN weights, chosen restart) and scores; then compare
two such files. Run it once with the old code and once with the new (``PYTHONPATH=...``) to check
that a change to StructRank leaves its model as it was (issue 43: bounded memory).

    python benchmarks/check_structrank_same.py --data ../shared/data/MQ2008 --fold 1 --out new.npz \\
        [--study config/studies/leaderboard.yaml] [--method structrank] [--block-elements N] [--threads 1]
        [--epochs E] [--restarts R]
    python benchmarks/check_structrank_same.py --compare old.npz new.npz [--rtol 1e-9]

``--block-elements N`` sets ``scorers.kernel.KERNEL_BLOCK_ELEMENTS`` (the Nadaraya-Watson weights'
chunk: N // reference documents rows, at least one) and turns off keeping weights for the vjp,
so the bounded path is taken as on a split of millions of documents (code without it: refused).
The comparison prints, per array, whether it is identical or its largest relative difference,
and exits 1 if any is beyond ``--rtol`` (0: identical).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
ARRAYS = ("theta", "cdn_weights", "chosen_restart", "objective", "vali_scores", "test_scores")


def fit(args) -> int:
    from rankstudy.cli.learn_check import prepared_fold, study_config
    from rankstudy.evaluation import metrics
    from rankstudy.rankers.registry import make_ranker
    from rankstudy.scorers import kernel
    from rankstudy.util.threads import use_job_threads

    use_job_threads(args.threads)  # as a pipeline job (a BLAS left at the core count spins beside neighbours)
    if args.block_elements:
        if not hasattr(kernel, "KERNEL_BLOCK_ELEMENTS"):
            raise SystemExit("--block-elements: this code has no scorers.kernel.KERNEL_BLOCK_ELEMENTS")
        kernel.KERNEL_BLOCK_ELEMENTS, kernel.KEPT_ELEMENTS = int(args.block_elements), 0
    config = study_config(args.study)
    splits = prepared_fold(args.data, args.fold, config, args.cache)
    options = {"rel_threshold": config["evaluation"]["rel_threshold"], "max_label": 2.0,
               "no_relevant": config["evaluation"].get("no_relevant", "zero")}
    spec = config["methods"][args.method]
    if spec["kind"] != "structrank":
        raise SystemExit(f"{args.study}: method {args.method!r} is of kind {spec['kind']!r}, not structrank")
    params = {"seed": config.get("seed", 0), **(spec.get("params") or {})}
    params.update({k: v for k, v in (("epochs", args.epochs), ("restarts", args.restarts)) if v is not None})
    start = time.process_time()
    model = make_ranker(spec["kind"], params).fit(splits["train"], splits["vali"])
    seconds = time.process_time() - start
    test = model.predict(splits["test"])
    ndcg = metrics.mean_metrics(metrics.evaluate(splits["test"], test, ["ndcg@10"], **options))["ndcg@10"]
    trace = model.objective_trace_
    print(f"{args.method}: restart {model.chosen_restart_} chosen, objective {trace['start']:.6f} -> "
          f"{trace['final']:.6f}, test NDCG@10 {ndcg:.4f}, {seconds:.1f} CPU-s", flush=True)
    np.savez(args.out, theta=model.theta_, cdn_weights=model.cdn_weights_, chosen_restart=np.array(model.chosen_restart_),
             objective=np.array([trace["start"], trace["final"]]), vali_scores=model.predict(splits["vali"]),
             test_scores=test)
    return 0


def compare(old_path: Path, new_path: Path, rtol: float) -> int:
    old, new = np.load(old_path), np.load(new_path)
    ok, cells = True, []
    for part in ARRAYS:
        a, b = old[part].astype(float), new[part].astype(float)
        if a.shape != b.shape:
            cells.append(f"{part} shapes differ {a.shape} {b.shape}")
            ok = False
            continue
        if np.array_equal(a, b):
            cells.append(f"{part} identical")
            continue
        rel = float((np.abs(a - b) / np.maximum(np.abs(a), np.abs(b)).max()).max())
        cells.append(f"{part} differ (max |diff| / max |value| {rel:.3g})")
        ok &= rel <= rtol
    print(", ".join(cells))
    return 0 if ok else 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--compare", nargs=2, type=Path, metavar=("OLD", "NEW"))
    parser.add_argument("--rtol", type=float, default=0.0)
    parser.add_argument("--data", type=Path)
    parser.add_argument("--fold", type=int, default=1)
    parser.add_argument("--study", type=Path, default=REPO / "config" / "studies" / "leaderboard.yaml")
    parser.add_argument("--method", default="structrank")
    parser.add_argument("--block-elements", type=int)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--epochs", type=int, help="fewer epochs than the study's (a shorter check)")
    parser.add_argument("--restarts", type=int, help="fewer restarts than the study's")
    parser.add_argument("--out", type=Path)
    parser.add_argument("--cache", type=Path, default=Path("/tmp/rankstudy-learn-check"))
    args = parser.parse_args()
    if args.compare:
        return compare(*args.compare, args.rtol)
    if args.data is None or args.out is None:
        parser.error("--data and --out are needed to fit (or --compare OLD NEW)")
    return fit(args)


if __name__ == "__main__":
    sys.exit(main())
