"""Did a method learn on real data? Train one method of a study config on one fold of a LETOR
data set, prepared as the pipeline prepares it (the study's cleaning and normalisation), and
print its training objective at the start and at the end, and its validation and test metrics
beside a random ranking's (the mean over 20 seeded permutations) and, with ``--reference``,
beside another method of the config (e.g. RankSVM) on the same fold.

    python -m rankstudy learn-check config/studies/chakrabarti2008-fig9.yaml DORM \\
        --data ../shared/data/OHSUMED/QueryLevelNorm --fold 1 --set C=10 --reference RankSVM

``--set key=value`` fixes a parameter (and drops it from the grid); without it the method's
grid is searched on the validation split as in the pipeline. The parsed, cleaned and
normalised fold is cached under ``--cache`` (default /tmp/rankstudy-learn-check), keyed by
the data folder, fold, cleaning and normalisation. A method that learnt ends with its objective
below its start and its metrics clearly above random and in the reference's range.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import time
from pathlib import Path

import numpy as np
import pandas as pd
import yaml

from rankstudy.data.folds import clean
from rankstudy.data.letor import read_letor
from rankstudy.data.rankdata import RankData
from rankstudy.evaluation import metrics
from rankstudy.features.normalize import Normalizer
from rankstudy.selection.search import select_and_fit
from rankstudy.selection.spec import SpecError, check_spec

ROOT = Path(__file__).resolve().parents[3]  # the checkout: its config/config.yaml
SPLITS = ("train", "vali", "test")


def study_config(path: Path) -> dict:
    """The study config merged over config/config.yaml, as snakemake --configfile does (top-level
    keys replace, nested mappings merge)."""
    base = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())

    def merge(a: dict, b: dict) -> dict:
        out = dict(a)
        for k, v in b.items():
            out[k] = merge(a[k], v) if isinstance(v, dict) and isinstance(a.get(k), dict) and k != "methods" else v
        return out

    return merge(base, yaml.safe_load(path.read_text()))


def prepared_fold(data: Path, fold: int, config: dict, cache: Path) -> dict[str, RankData]:
    """The fold's three splits, cleaned and normalised as the study's config says."""
    rel = config["evaluation"]["rel_threshold"]
    key = json.dumps([str(data.resolve()), fold, config.get("cleaning", {}), rel,
                      config["features"]["normalization"]], sort_keys=True)
    folder = cache / hashlib.sha256(key.encode()).hexdigest()[:16]
    if all((folder / f"{s}.npz").exists() for s in SPLITS):
        return {s: RankData.from_npz(folder / f"{s}.npz") for s in SPLITS}
    from rankstudy.data.folds import Fold

    splits = {}
    for s in SPLITS:
        tried = (data / f"Fold{fold}" / f"{s}.txt.gz", data / f"Fold{fold}" / f"{s}.txt")
        path = next((p for p in tried if p.exists()), None)
        if path is None:  # e.g. OHSUMED's folds sit one folder down: --data .../OHSUMED/Feature-min
            found = sorted(str(f.relative_to(data)) for f in data.glob("**/Fold*") if f.is_dir())[:3]
            raise SystemExit(f"learn-check: no {s} split of fold {fold} under --data {data} (looked for "
                             f"{tried[0]} and {tried[1].name})"
                             + (f"; folds found there: {', '.join(found)}" if found else ""))
        splits[s] = read_letor(path)
    parsed = Fold(splits, float(max(d.y.max() for d in splits.values())))
    clean(parsed, config.get("cleaning", {}), rel)
    normalizer = Normalizer(config["features"]["normalization"]).fit(parsed.splits["train"])
    out = {s: normalizer.transform(d) for s, d in parsed.splits.items()}
    folder.mkdir(parents=True, exist_ok=True)
    for s, d in out.items():
        d.to_npz(folder / f"{s}.npz")
    (folder / "key.json").write_text(key)
    return out


def random_metric(data: RankData, names: list[str], options: dict, draws: int = 20) -> dict[str, float]:
    """The mean metrics of uniformly random rankings (``draws`` seeded permutations)."""
    rng = np.random.default_rng(12345)
    rows = [metrics.mean_metrics(metrics.evaluate(data, rng.random(len(data.y)), names, **options))
            for _ in range(draws)]
    return {n: float(np.mean([r[n] for r in rows])) for n in names}


def method_params(config: dict, study: Path, name: str, fixed: dict) -> tuple[dict, dict]:
    """The method's parameters with ``--set``'s over them, and its grid without them, checked as
    the config check does, before any data is read: a SystemExit of one line naming the method
    and the parameter, not a traceback from the fit."""
    if name not in config["methods"]:
        raise SystemExit(f"learn-check: no method {name!r} in {study}; its methods: {', '.join(config['methods'])}")
    spec = config["methods"][name]
    params = {**(spec.get("params") or {}), **fixed}
    grid = {k: v for k, v in (spec.get("grid") or {}).items() if k not in fixed}
    try:
        check_spec({**spec, "params": params, "grid": grid}, config.get("seed", 0),
                   config["evaluation"]["rel_threshold"])
    except SpecError as exc:
        given = f" with --set {', '.join(fixed)}" if fixed else ""
        raise SystemExit(f"learn-check: method {name!r}{given}: {exc.key}: {exc.problem}") from None
    return {"seed": config.get("seed", 0), **params}, grid


def train_method(config: dict, name: str, method: tuple[dict, dict], splits: dict, names: list[str],
                 options: dict) -> dict:
    spec, (params, grid) = config["methods"][name], method
    start = time.perf_counter()
    ranker, chosen, table = select_and_fit(spec["kind"], params, grid, splits["train"], splits["vali"],
                                           metric=config["evaluation"]["selection_metric"],
                                           metric_options=options)
    seconds = time.perf_counter() - start
    out = {"method": name, "chosen": {k: chosen[k] for k in grid}, "seconds": round(seconds, 1)}
    trace = getattr(ranker, "objective_trace_", None)
    if trace:
        out["objective"] = trace
    for s in SPLITS:
        m = metrics.mean_metrics(metrics.evaluate(splits[s], ranker.predict(splits[s]), names, **options))
        out[s] = {n: round(m[n], 4) for n in names}
    print(pd.DataFrame(table).to_string(index=False))  # one row per grid candidate
    return out


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("study", type=Path)
    parser.add_argument("method")
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared/data/OHSUMED/QueryLevelNorm")
    parser.add_argument("--fold", type=int, default=1)
    parser.add_argument("--set", action="append", default=[], help="key=value (YAML value)")
    parser.add_argument("--reference", help="another method of the config, on the same fold")
    parser.add_argument("--metrics", nargs="+", default=["ndcg@10", "map", "mrr@10", "ndcg@1"])
    parser.add_argument("--cache", type=Path, default=Path("/tmp/rankstudy-learn-check"))


def run(args: argparse.Namespace) -> int:
    config = study_config(args.study)
    bad = [item for item in args.set if "=" not in item]
    if bad:
        raise SystemExit(f"learn-check: --set {bad[0]!r}: expected key=value (a YAML value), e.g. --set C=10")
    fixed = {k: yaml.safe_load(v) for k, v in (item.split("=", 1) for item in args.set)}
    method = method_params(config, args.study, args.method, fixed)
    reference = method_params(config, args.study, args.reference, {}) if args.reference else None
    splits = prepared_fold(args.data, args.fold, config, args.cache)
    options = {"rel_threshold": config["evaluation"]["rel_threshold"], "max_label": 2.0,
               "no_relevant": config["evaluation"].get("no_relevant", "zero")}
    lengths = np.diff(splits["train"].offsets)
    print(f"{args.data} fold {args.fold}: {splits['train'].n_queries} training queries of "
          f"{lengths.mean():.0f} documents on average ({lengths.max()} at most)")
    results = [train_method(config, args.method, method, splits, args.metrics, options)]
    if args.reference:
        results.append(train_method(config, args.reference, reference, splits, args.metrics, options))
    for s in ("vali", "test"):
        results.append({"method": "random", s: {k: round(v, 4) for k, v in
                                                 random_metric(splits[s], args.metrics, options).items()}})
    print(json.dumps(results, indent=1))
    return 0
