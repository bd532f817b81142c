"""Does a leaderboard method learn on a synthetic fold shaped like a large benchmark? One fit of its
reference candidate (the middle of its grid, as bench_board_cost.py's) on fold 1 at 1/k of the
shape's queries, then its validation NDCG@10 against a random ranking's (the mean of seeded draws)
and its training objective at the start and at the end: ``learn-check`` (real LETOR folds) for
the MSLR-WEB30K-, Yahoo- and Istella-shaped folds, which have no files of their own. Also the
fit's CPU seconds and its peak RSS growth above the splits, held in memory as ``--dtype`` stores
them (``features.dtype``: float32 halves the features; a ranker that copies them to float64 shows
it here).

    python benchmarks/bench_learn_shaped.py METHOD [--shape mslr30k|yahoo|istella] [--size 16]
        [--dtype float64|float32] [--set key=value ...] [--workdir DIR]

The folds are bench_board_cost.py's (``prepare``: written once under ``--workdir``, default
``$TMPDIR/board-cost``), so a fold its report measured is the fold checked here.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("method", help="a method of --study")
    parser.add_argument("--study", type=Path, default=REPO / "config" / "studies" / "leaderboard.yaml")
    parser.add_argument("--shape", default="mslr30k", choices=["mslr30k", "yahoo", "istella"])
    parser.add_argument("--size", type=int, default=16, help="1/size of a fold's queries")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="a parameter of the method, as YAML (e.g. --set n_rounds=1000)")
    parser.add_argument("--dtype", default="float64", choices=["float64", "float32"], help="the features' storage")
    parser.add_argument("--workdir", type=Path, default=Path(tempfile.gettempdir()) / "board-cost")
    args = parser.parse_args()
    if bad := [item for item in args.set if "=" not in item]:
        parser.error(f"--set {bad[0]!r}: expected key=value (a YAML value), e.g. --set n_rounds=1000")

    import numpy as np
    from bench_board_cost import _status, candidates, data_dir, prepare, study_methods

    from rankstudy.data.rankdata import RankData
    from rankstudy.evaluation import metrics
    from rankstudy.evaluation.learning import random_metrics
    from rankstudy.rankers.registry import make_ranker
    from rankstudy.selection.spec import training_params

    spec = study_methods(args.study, [args.method])[args.method]
    grid, reference = candidates(spec)
    fixed = {key: yaml.safe_load(value) for key, value in (item.split("=", 1) for item in args.set)}
    params = {**training_params(spec, seed=0, rel_threshold=1), **grid[reference], **fixed}
    meta = prepare(args.workdir, args.shape, args.size)
    folder = data_dir(args.workdir, args.shape, args.size)
    # into anonymous memory as --dtype stores them (the cache is a memory map), as bench_board_cost's child
    train, vali = (RankData.from_npz(folder / f"{split}.npz") for split in ("train", "vali"))
    train, vali = (d.with_features(np.array(d.X, dtype=args.dtype)) for d in (train, vali))
    print(f"{args.shape} 1/{args.size}: {meta['train_queries']:,} training queries, {meta['train_docs']:,} "
          f"documents (vali {meta['vali_docs']:,}); {args.method} {params}", file=sys.stderr)
    Path("/proc/self/clear_refs").write_text("5")  # the high-water mark starts again from now
    rss0, start = _status("VmRSS"), time.process_time()
    ranker = make_ranker(spec["kind"], params).fit(train, vali)
    cpu, growth = time.process_time() - start, max(_status("VmHWM") - rss0, 0)
    options = {"rel_threshold": 1, "no_relevant": "zero"}
    ndcg = metrics.mean_metrics(metrics.per_query(ranker.predict(vali), vali.y, vali.offsets, ["ndcg@10"],
                                                  **options))["ndcg@10"]
    print(json.dumps({"method": args.method, "shape": args.shape, "size": args.size, "dtype": args.dtype,
                      "cpu_seconds": round(cpu, 1), "rss_growth_mb": round(growth / 2**20),
                      "vali_ndcg@10": round(ndcg, 4),
                      "random_vali_ndcg@10": round(random_metrics(vali, ["ndcg@10"], **options)["ndcg@10"], 4),
                      "objective": ranker.objective_trace_, "history_steps": len(ranker.history_)}, indent=1))


if __name__ == "__main__":
    main()
