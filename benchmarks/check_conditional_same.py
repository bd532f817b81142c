"""Same seed, same model: fit study methods of kind ``conditional`` (default ``cond_mle`` and
``cond_convex`` of the leaderboard, one C) on one fold of a real LETOR data set, prepared as
the pipeline prepares it (``learn-check``'s cached fold), and save their weights and scores;
then compare two such files to the bit. Run it once with the old code and once with the new
(``PYTHONPATH=...``) to check that a change to the conditional models leaves their models as
they were (issue 43: the sample in chunks of queries).

    python benchmarks/check_conditional_same.py --data ../shared/data/MQ2008 --fold 1 --out new.npz \\
        [--study config/studies/leaderboard.yaml] [--methods cond_mle cond_convex] [--C 1.0] \\
        [--block-elements N]
    python benchmarks/check_conditional_same.py --compare old.npz new.npz

Run both on the same prepared fold (run one first to fill ``--cache``, or give each a fresh
cache): the fits move with the features' memory alignment, old code and new alike (OHSUMED fold
1, cond_mle: X read back from the cache's npz at an address 5 mod 64, 181 L-BFGS iterations;
a freshly prepared or copied X, 48 mod 64, 200 iterations and weights up to 3e-3 away).

``--block-elements`` sets ``losses.conditional.SAMPLE_BLOCK_ELEMENTS`` (the sample's chunk size;
a small value puts every query in a chunk of its own; ignored by code without chunks). The
comparison prints, per method, whether the weights and the test and validation scores are
identical and their largest absolute difference, and exits 1 if any differ.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
ARRAYS = ("coef", "test_scores", "vali_scores")


def fit(args) -> int:
    from rankstudy.cli.learn_check import prepared_fold, study_config
    from rankstudy.evaluation import metrics
    from rankstudy.losses import conditional
    from rankstudy.rankers.registry import make_ranker

    if args.block_elements:
        conditional.SAMPLE_BLOCK_ELEMENTS = int(args.block_elements)
    config = study_config(args.study)
    splits = prepared_fold(args.data, args.fold, config, args.cache)
    options = {"rel_threshold": config["evaluation"]["rel_threshold"], "max_label": 2.0,
               "no_relevant": config["evaluation"].get("no_relevant", "zero")}
    out = {}
    for name in args.methods:
        spec = config["methods"][name]
        if spec["kind"] != "conditional":
            raise SystemExit(f"{args.study}: method {name!r} is of kind {spec['kind']!r}, not conditional")
        params = {"seed": config.get("seed", 0), **(spec.get("params") or {}), "C": args.C}
        start = time.process_time()
        model = make_ranker(spec["kind"], params).fit(splits["train"], splits["vali"])
        seconds = time.process_time() - start
        test = model.predict(splits["test"])
        ndcg = metrics.mean_metrics(metrics.evaluate(splits["test"], test, ["ndcg@10"], **options))["ndcg@10"]
        print(f"{name}: {model.n_iter_} iterations, objective {model.objective_trace_['start']:.6f} -> "
              f"{model.objective_trace_['final']:.6f}, test NDCG@10 {ndcg:.4f}, {seconds:.1f} CPU-s", flush=True)
        out.update({f"{name}.coef": model.coef_, f"{name}.test_scores": test,
                    f"{name}.vali_scores": model.predict(splits["vali"]),
                    f"{name}.objective": np.array([model.objective_trace_["start"], model.objective_trace_["final"]]),
                    f"{name}.n_iter": np.array(model.n_iter_)})
    np.savez(args.out, **out)
    return 0


def compare(old_path: Path, new_path: Path) -> int:
    old, new = np.load(old_path), np.load(new_path)
    methods = sorted({key.split(".")[0] for key in old.files})
    same = True
    for name in methods:
        cells = []
        for part in ARRAYS + ("objective", "n_iter"):
            a, b = old[f"{name}.{part}"], new[f"{name}.{part}"]
            equal = a.shape == b.shape and np.array_equal(a, b)
            diff = float(np.abs(a - b).max()) if a.shape == b.shape else float("nan")
            cells.append(f"{part} {'identical' if equal else f'differ (max |diff| {diff:.3g})'}")
            same &= equal
        print(f"{name}: " + ", ".join(cells))
    return 0 if same else 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--compare", nargs=2, type=Path, metavar=("OLD", "NEW"))
    parser.add_argument("--data", type=Path)
    parser.add_argument("--fold", type=int, default=1)
    parser.add_argument("--study", type=Path, default=REPO / "config" / "studies" / "leaderboard.yaml")
    parser.add_argument("--methods", nargs="+", default=["cond_mle", "cond_convex"])
    parser.add_argument("--C", type=float, default=1.0)
    parser.add_argument("--block-elements", type=int)
    parser.add_argument("--out", type=Path)
    parser.add_argument("--cache", type=Path, default=Path("/tmp/rankstudy-learn-check"))
    args = parser.parse_args()
    if args.compare:
        return compare(*args.compare)
    if args.data is None or args.out is None:
        parser.error("--data and --out are needed to fit (or --compare OLD NEW)")
    return fit(args)


if __name__ == "__main__":
    sys.exit(main())
