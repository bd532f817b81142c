"""Pruned against unpruned tuning at the same budget (issue 43): for each method and fold, the same
study twice in this process, once with ``tune.pruner: none`` and once with the pruner asked for
(same sampler and seed, journal storage in a temporary folder; the same trials budget, or with
``--pruned-trials N --cpu-share 0.35`` N trials for the pruned study under a CPU cap of 35% of what
the unpruned one spent on that fold): the best validation score each study reached and the
CPU-seconds its trials spent. ``--pruner none`` with ``--cpu-share`` is the control: the same
trials and cap without a pruner (its rows ``none, capped``), so what the cap alone gives is told
apart from what the pruner adds. ``--train-fraction F`` is fidelity by data (``tune.train_fraction``):
the compared study's trials fit on a seeded share F of the training queries, its best is fitted
again on the whole fold, and that model's validation score is its best; its CPU is the whole
call's (the trials and the refit on the whole fold), set against the unpruned study's call. Its
floor is the unpruned study's untuned trial, as a tuned board's default twin gives it (from a
record without it, the untuned candidates are fitted on the whole fold inside the call).

    python benchmarks/bench_pruning.py [--data-root ../shared/data] [--datasets MQ2008 OHSUMED]
        [--folds 1 2 3 4 5] [--methods lambdamart xgb_ndcg mlp_softmax] [--trials 20]
        [--pruner hyperband] [--pruned-trials 60 --cpu-share 0.35] [--train-fraction 0.25] [--sampler tpe]
        [--shape mslr30k --size 16] [--out results.jsonl]

``--shape mslr30k --size 16`` uses bench_board_cost.py's synthetic data shaped like MSLR-WEB30K at
1/16 of a fold instead of LETOR folds (``--folds``: the rotation's folds of that one data set). The
methods are the leaderboard's (their params and the neural method_defaults,
config/studies/leaderboard.yaml), their untuned grid candidates the first trials as in the pipeline.
Reported per method: the median over folds of (unpruned best - pruned best) and of the CPU ratio
pruned / unpruned, with every fold's row. Target (issue 43): within .002 at no more than 35% of the
CPU. Each study appends one JSON line to ``--out`` (default ``$TMPDIR/bench-pruning.jsonl``), so a
stopped run keeps what it measured; ``--report-only`` tabulates that file.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks"))


def leaderboard_methods(names: list[str]) -> dict[str, dict]:
    study = yaml.safe_load((REPO / "config" / "studies" / "leaderboard.yaml").read_text())
    shared = study.get("method_defaults") or {}
    out = {}
    for name in names:
        spec = dict(study["methods"][name])
        defaults = (shared.get(spec["kind"]) or {}).get("params") or {}
        spec["params"] = {**defaults, **(spec.get("params") or {})}
        out[name] = spec
    return out


def folds(args: argparse.Namespace):
    """(label, train, vali, max_label) of every fold asked for."""
    if args.shape:
        from bench_board_cost import data_dir, prepare

        from rankstudy.data.rankdata import RankData

        workdir = Path(tempfile.gettempdir()) / "board-cost"
        for fold in args.folds:  # the rotation's folds of one synthetic data set
            prepare(workdir, args.shape, args.size, fold=fold)
            folder = data_dir(workdir, args.shape, args.size, fold)
            yield (f"{args.shape}-1of{args.size}" + ("" if fold == 1 else f" fold {fold}"),
                   RankData.from_npz(folder / "train.npz"), RankData.from_npz(folder / "vali.npz"), 4.0)
        return
    from rankstudy.cli.learn_check import prepared_fold, study_config

    config = study_config(REPO / "config" / "studies" / "leaderboard.yaml")
    for dataset in args.datasets:
        data = args.data_root / dataset / ("QueryLevelNorm" if dataset == "OHSUMED" else "")
        for fold in args.folds:
            splits = prepared_fold(data, fold, config, Path(tempfile.gettempdir()) / "rankstudy-learn-check")
            yield f"{dataset} fold {fold}", splits["train"], splits["vali"], float(max(s.y.max() for s in splits.values()))


def metric_options(max_label: float) -> dict:
    """NDCG@10 as the pipeline's selection scores it (rankstudy's defaults)."""
    return {"rel_threshold": 1, "no_relevant": "zero", "max_label": max_label}


def study(kind: str, params: dict, grid: dict, train, vali, max_label: float, trials: int, sampler: str,
          pruner, journal: Path, name: str, cpu_seconds: float | None = None, train_fraction: float = 1,
          base_value: float | None = None) -> dict:
    from rankstudy.selection.settings import TuneSettings
    from rankstudy.selection.tuning import base_candidates, study_name, tune_and_fit, tuning_space

    options = metric_options(max_label)
    settings = TuneSettings(sampler=sampler, trials=trials, pruner=pruner, grid=grid, cpu_seconds=cpu_seconds,
                            train_fraction=train_fraction)
    space = tuning_space(kind, params)
    base = base_candidates(kind, params, space, grid)
    full = study_name(name, kind, params, space, settings, "ndcg@10", options, base)
    start, cpu = time.perf_counter(), time.process_time()
    out = tune_and_fit(kind, params, space, train, vali, metric="ndcg@10", metric_options=options,
                       settings=settings, storage=str(journal), name=full, base=base, progress=lambda _: None,
                       base_value=base_value)
    untuned = [r["vali.ndcg@10"] for r in out.rows if r["untuned"] and r["state"] == "complete"]
    # with a train fraction the trials' scores are of models fitted on a subsample: the model's own
    # score is the refit's on the whole fold
    return {"best": out.summary.get("full_fold_value", out.summary["best_value"]),
            "best_trial_value": out.summary["best_value"], "cpu_seconds": out.summary["cpu_seconds"],
            "call_cpu_seconds": round(time.process_time() - cpu, 2), "train_fraction": train_fraction,
            # the untuned selection's validation score on the whole fold (the unpruned study's untuned
            # trial; a train fraction's floor), and whether a train fraction kept its model
            "untuned_value": out.summary.get("untuned_full_fold_value", max(untuned, default=None)),
            "kept_untuned": out.summary.get("kept_untuned", False),
            "pruned": out.summary["pruned"], "reports": out.summary["reports"],
            "wall_seconds": round(time.perf_counter() - start, 2)}


def run(args: argparse.Namespace) -> None:
    from rankstudy.util.threads import use_job_threads

    use_job_threads(1)
    methods = leaderboard_methods(args.methods)
    done = {(r["fold"], r["method"], r["pruner"]): r for r in load(args.out)}
    with tempfile.TemporaryDirectory() as tmp:
        for label, train, vali, max_label in folds(args):
            for name, spec in methods.items():
                params = {**spec["params"], "seed": 0}
                unpruned = None
                for arm, pruner in (("none", "none"), (arm_name(args), args.pruner)):
                    key = (label, name, arm)
                    if key in done:
                        unpruned = unpruned or done[key]
                        continue
                    # the pruned study: more trials, under a CPU cap of --cpu-share of the unpruned one's
                    trials, cap = (args.trials, None) if arm == "none" else (
                        args.pruned_trials or args.trials,
                        args.cpu_share * unpruned["cpu_seconds"] if args.cpu_share and unpruned else None)
                    journal = Path(tmp) / f"{name}-{label.replace(' ', '')}-{arm[:40]}.journal"
                    row = study(spec["kind"], params, spec.get("grid") or {}, train, vali, max_label, trials,
                                args.sampler, pruner, journal, f"bench/{label}/{name}", cap,
                                1 if arm == "none" else args.train_fraction,
                                None if arm == "none" else twin_floor(unpruned, spec["kind"], params, spec, train,
                                                                      vali, max_label))
                    row.update(fold=label, method=name, pruner=arm, trials=trials, sampler=args.sampler,
                               cpu_cap=cap)
                    unpruned = unpruned or row
                    print(json.dumps(row), flush=True)
                    with open(args.out, "a") as f:
                        f.write(json.dumps(row) + "\n")


def twin_floor(unpruned: dict, kind: str, params: dict, spec: dict, train, vali, max_label: float) -> float | None:
    """The floor a tuned board's default twin gives a study on a train fraction: the unpruned
    study's untuned trial (fitted on the whole fold); for a record made before it was kept, the
    untuned candidates fitted here, outside any study's CPU (the twin's fit is not the tuned job's)."""
    if unpruned.get("untuned_value") is not None:
        return unpruned["untuned_value"]
    from rankstudy.selection.search import select_and_fit

    _, _, rows = select_and_fit(kind, params, spec.get("grid") or None, train, vali, metric="ndcg@10",
                                metric_options=metric_options(max_label), progress=lambda _: None)
    return max(r["vali.ndcg@10"] for r in rows if r["state"] == "complete")


def shown(pruner) -> str:
    """A pruner setting as one string (the rows' key)."""
    return pruner if isinstance(pruner, str) else json.dumps(pruner, sort_keys=True)


def arm_name(args: argparse.Namespace) -> str:
    """The compared study's key: its pruner; ``none, capped`` for the control, no pruner but the
    same trials and cap, which says how much of a capped study's result the cap alone gives."""
    name = shown(args.pruner)
    if name == "none" and (args.cpu_share or args.pruned_trials):
        name = "none, capped"
    return name if args.train_fraction == 1 else f"{name}, train fraction {args.train_fraction:g}"


def load(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()] if path.exists() else []


def report(args: argparse.Namespace) -> str:
    rows = load(args.out)
    pruner = arm_name(args)
    lines = [f"Pruner {pruner} against none, {args.trials} trials ({args.sampler}), from {args.out}:", "",
             "| method | folds | median best gap (none - pruned) | worst gap | median CPU pruned / none | "
             "trials pruned (mean) | within target (gap <= .002, CPU <= 35%) |", "|---|---|---|---|---|---|---|"]
    for method in dict.fromkeys(r["method"] for r in rows):
        pairs = []
        for fold in dict.fromkeys(r["fold"] for r in rows if r["method"] == method):
            got = {r["pruner"]: r for r in rows if r["method"] == method and r["fold"] == fold}
            if "none" in got and pruner in got:
                pairs.append((got["none"], got[pruner]))
        if not pairs:
            continue
        gaps = [a["best"] - b["best"] for a, b in pairs]
        # a train fraction's refit on the whole fold is outside its trials: whole calls against whole calls
        spent = "call_cpu_seconds" if args.train_fraction < 1 else "cpu_seconds"
        ratios = [b[spent] / a[spent] for a, b in pairs if a.get(spent)]
        gap, ratio = float(np.median(gaps)), float(np.median(ratios))
        pruned = np.mean([b["pruned"] for _, b in pairs])
        ok = "yes" if gap <= 0.002 and ratio <= 0.35 else "no"
        lines.append(f"| {method} | {len(pairs)} | {gap:+.4f} | {max(gaps):+.4f} | {ratio:.2f} | {pruned:.1f} | {ok} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-root", type=Path, default=REPO.parent / "shared" / "data")
    parser.add_argument("--datasets", nargs="+", default=["MQ2008", "OHSUMED"])
    parser.add_argument("--folds", type=int, nargs="+", default=[1, 2, 3, 4, 5])
    parser.add_argument("--methods", nargs="+", default=["lambdamart", "xgb_ndcg", "mlp_softmax"])
    parser.add_argument("--trials", type=int, default=20)
    parser.add_argument("--pruner", default="hyperband", type=yaml.safe_load,
                        help="a tune.pruner value: a name, or YAML ('{kind: successive_halving, reduction_factor: 4}')")
    parser.add_argument("--sampler", default="tpe", choices=["tpe", "random"])
    parser.add_argument("--pruned-trials", type=int,
                        help="the pruned study's trials (default --trials): with --cpu-share, more trials for less CPU")
    parser.add_argument("--cpu-share", type=float,
                        help="cap the pruned study's CPU at this share of the unpruned study's on the same fold")
    parser.add_argument("--train-fraction", type=float, default=1.0,
                        help="the compared study's trials fit on this share of the training queries (tune.train_fraction)")
    parser.add_argument("--shape", help="a synthetic fold shaped like this data set (bench_board_cost.py's)")
    parser.add_argument("--size", type=int, default=16, help="with --shape: 1/size of a fold")
    parser.add_argument("--out", type=Path, default=Path(tempfile.gettempdir()) / "bench-pruning.jsonl")
    parser.add_argument("--report-only", action="store_true")
    args = parser.parse_args()
    if not args.report_only:
        run(args)
    print(report(args))


if __name__ == "__main__":
    main()
