"""Same seed, same model: fit one method of a study on one fold of a real LETOR data set,
prepared as the pipeline prepares it (``learn-check``'s cached fold, so old and new code read the
same arrays), and save its model (the ranker's JSON: parameters, fitted state, history) and its
validation and test scores; then compare two such runs. Run it once with the old code and once
with the new (``PYTHONPATH=...``) to check that a change leaves the model as it was (issue 43:
Coordinate Ascent's line search, the conditional models' chunked sample, StructRank's memory,
RankBoost's binned features).

    python -m rankstudy same-fit --data ../shared/data/MQ2008 --fold 1 --method coordinate_ascent \\
        --out new [--study config/studies/leaderboard.yaml] [--set C=1.0] [--threads 1]
    python -m rankstudy same-fit --compare old new [--rtol 0]

``--out X`` writes X.json (the model) and X.npz (scores, CPU seconds). The comparison prints
whether the fitted state, the history and the scores are identical, or their largest relative
difference, and exits 1 if any is beyond ``--rtol`` (0: identical). The features' alignment in
memory can move an L-BFGS fit (a BLAS kernel sums in another order): compare fits of the same
prepared fold.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
import yaml

ROOT = Path(__file__).resolve().parents[3]  # the checkout: its config/


def fit(args) -> int:
    from rankstudy.cli.learn_check import prepared_fold, study_config
    from rankstudy.evaluation import metrics
    from rankstudy.rankers.registry import make_ranker
    from rankstudy.selection.spec import training_params
    from rankstudy.util.threads import use_job_threads

    use_job_threads(args.threads)
    config = study_config(args.study)
    splits = prepared_fold(args.data, args.fold, config, args.cache)
    rel = config["evaluation"]["rel_threshold"]
    options = {"rel_threshold": rel, "max_label": 2.0, "no_relevant": config["evaluation"].get("no_relevant", "zero")}
    spec = config["methods"][args.method]
    params = training_params(spec, seed=config.get("seed", 0), rel_threshold=rel)
    params.update({k: yaml.safe_load(v) for k, v in (item.split("=", 1) for item in args.set)})
    start = time.process_time()
    model = make_ranker(spec["kind"], params).fit(splits["train"], splits["vali"])
    seconds = time.process_time() - start
    scores = {s: model.predict(splits[s]) for s in ("vali", "test")}
    test = metrics.mean_metrics(metrics.evaluate(splits["test"], scores["test"], ["ndcg@10", "map"], **options))
    print(f"{args.method} on {args.data.name} fold {args.fold}: {len(model.history_)} history entries, "
          f"objective {model.objective_trace_}, test NDCG@10 {test['ndcg@10']:.4f}, MAP {test['map']:.4f}, "
          f"{seconds:.1f} CPU-s", flush=True)
    model.save(f"{args.out}.json")
    np.savez(f"{args.out}.npz", vali_scores=scores["vali"], test_scores=scores["test"], cpu_seconds=seconds)
    return 0


def _numbers(value) -> np.ndarray:
    """Every number of a JSON value, in order (the fitted state and history as one array)."""
    if isinstance(value, dict):
        return np.concatenate([_numbers(value[k]) for k in sorted(value)] or [np.zeros(0)])
    if isinstance(value, list):
        return np.concatenate([_numbers(v) for v in value] or [np.zeros(0)])
    return np.array([float(value)]) if isinstance(value, (int, float)) else np.zeros(0)


def _difference(a: np.ndarray, b: np.ndarray) -> str | float:
    if a.shape != b.shape:
        return f"shapes differ {a.shape} {b.shape}"
    if np.array_equal(a, b):
        return 0.0
    return float((np.abs(a - b) / max(np.abs(a).max(), np.abs(b).max())).max())


def compare(old: str, new: str, rtol: float) -> int:
    docs = [json.loads(Path(f"{x}.json").read_text()) for x in (old, new)]
    arrays = [np.load(f"{x}.npz") for x in (old, new)]
    parts = {"state": [_numbers(d["state"]) for d in docs], "history": [_numbers(d["history"]) for d in docs],
             "vali_scores": [a["vali_scores"] for a in arrays], "test_scores": [a["test_scores"] for a in arrays]}
    ok, cells = docs[0]["params"] == docs[1]["params"], []
    if not ok:
        cells.append(f"params differ {docs[0]['params']} {docs[1]['params']}")
    for name, (a, b) in parts.items():
        diff = _difference(a, b)
        if isinstance(diff, str):
            cells.append(f"{name} {diff}")
            ok = False
        else:
            cells.append(f"{name} identical" if diff == 0 else f"{name} differ (max |diff| / max |value| {diff:.3g})")
            ok &= diff <= rtol
    cpu = [float(a["cpu_seconds"]) for a in arrays]
    cells.append(f"CPU-s {cpu[0]:.1f} -> {cpu[1]:.1f}")
    print(", ".join(cells))
    return 0 if ok else 1


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--data", type=Path)
    parser.add_argument("--fold", type=int, default=1)
    parser.add_argument("--study", type=Path, default=ROOT / "config" / "studies" / "leaderboard.yaml")
    parser.add_argument("--method", default="coordinate_ascent")
    parser.add_argument("--set", action="append", default=[], help="key=value (YAML value): a parameter fixed")
    parser.add_argument("--cache", type=Path, default=Path("/tmp/rankstudy-learn-check"))
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--out", help="writes OUT.json and OUT.npz")
    parser.add_argument("--compare", nargs=2, metavar=("OLD", "NEW"))
    parser.add_argument("--rtol", type=float, default=0.0)


def run(args: argparse.Namespace) -> int:
    if args.compare:
        return compare(*args.compare, args.rtol)
    if not (args.data and args.out):
        raise SystemExit("same-fit: --data and --out are needed to fit (or --compare OLD NEW)")
    return fit(args)
