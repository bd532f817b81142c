"""Cost at scale: how long each method of a study's board takes to fit on synthetic folds shaped
like MSLR-WEB30K (136 features, about 120 documents per query, labels 0-4) at 1/16, 1/8 and 1/4
of a fold, how that grows with the training documents n (t = a n^b, least squares on log-log),
and what the whole board would cost: 5 folds, each method at its defaults (one fit per grid
candidate) and tuned (trials x one fit, and at the study's budget: the trials started before its
CPU cap is spent), on this 2-core machine and on N nodes of 2 cores.

    python benchmarks/bench_board_cost.py [--study config/studies/leaderboard.yaml] [--methods M ...]
        [--shape mslr30k|yahoo|istella] [--sizes 16 8 4] [--max-seconds 600] [--wall-guard 4] [--trials 20]
        [--trial-draws 0] [--cpu-seconds 60] [--nodes 1 4 16] [--workdir DIR] [--report-only]
        [--pruning PRUNING.jsonl ... [--pruner hyperband ...]]

Each fit runs in a child process of its own (so a fit over its cap can be stopped, and its memory
is its own), one at a time, on one thread (BLAS, OpenMP, LightGBM, XGBoost, CatBoost:
``use_job_threads(1)``; JAX's XLA may still use a second core, CPU/wall shows it). The cap,
``--max-seconds``, is the child's CPU-seconds of fitting (user and system, all its threads): the
fit's cost, which the footprints predict, and which the shared machine's other load does not
stretch as it stretches wall time. A guard of ``--wall-guard`` (4) times the cap in wall seconds
still stops a child that hangs asleep; a stopped fit records which stopped it (``stopped_by``:
cpu, wall or memory) and the caps it ran under (``cpu_cap_s``, ``wall_cap_s``). The child
builds the ranker as the train job does (``make_ranker(kind, training_params(spec) + candidate)``),
fits it once untimed on 5 queries (compilation, first imports), then times ``fit(train, vali)``:
wall and CPU seconds, and the peak RSS above the RSS with both splits in memory (the kernel's
high-water mark, reset just before the fit through /proc/self/clear_refs). It also records the
validation NDCG@10 (did it learn) and the length of the training history.

Order: every method at the smallest size first (every grid candidate there; the middle candidate,
the "reference", first), then the larger sizes (the reference candidate only; the default job's
cost is the reference's times the ratio of all candidates to it at the smallest size). A method
whose reference fit was stopped at the memory limit is not run at larger sizes, nor one stopped at
a cap whose CPU spent, grown at least linearly to the next size, is over the CPU cap (a fit the
wall guard stopped early may run there); one whose next size's CPU is predicted (from its points
so far, b = 1 from a single point) above 1.5x the cap is skipped: all are extrapolated from fewer
points and the report says so. ``--trial-draws K`` also fits K parameter sets drawn at random
from the method's search space (``tuning_space``) at the smallest size, so a tuned trial's cost is
the mean of the drawn and the default fit, not the default's. A method with nothing to draw
(RankBoost: ``rankstudy.pipeline.tuned.draws_anything``) has no draws and no tuned job.

``--pruning`` reads ``bench_pruning.py``'s records (its ``--out`` files) and adds the tuned board
with each tuned job's CPU times what the pruner saved for that method there (the median over its
folds of this shape, else over the LETOR folds): a measured ratio applied to the predicted jobs,
for the methods it was measured for; the others stay unpruned, and the report lists which.

Each fit is appended to ``fits.jsonl`` in the workdir (default ``$TMPDIR/board-cost``); a rerun
skips the fits already there, so a stopped run continues. ``--report-only`` writes
``board-cost.md`` and ``board-cost.csv`` from what is there. Predictions: CPU seconds per fit at
the full fold's training documents (``--full-docs``); a job is one method on one fold (its grid
candidates, or its ``--trials`` trials, one after another, on one core); on C cores the board
takes max(sum of jobs / C, longest job) (jobs packed perfectly), so 2 cores, N nodes of 2.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
import yaml

REPO = Path(__file__).resolve().parents[1]

# The synthetic generator's arguments for a whole data set (five parts; a fold trains on three):
# MSLR-WEB30K as bench_scale.py's mslr30k (31,531 queries, about 124 documents a query); Yahoo
# Set 1 (19,944 training queries, 473,134 documents, 700 features: 23.7 a query, 1..139) and
# Istella (23,219 training queries, 7.3M documents, 220 features, about 316 a query) with their
# training queries as a fold's three parts.
SHAPES = {
    "mslr30k": {"n_queries": 31531, "n_features": 136, "median_len": 90, "min_len": 1, "max_len": 1251},
    "yahoo": {"n_queries": 33240, "n_features": 700, "median_len": 17, "min_len": 1, "max_len": 139},
    "istella": {"n_queries": 38698, "n_features": 220, "median_len": 235, "min_len": 1, "max_len": 1000},
}
# training documents of the real data set's fold (MSLR-WEB30K Fold1 ~2.27M, Yahoo Set 1's train
# file, Istella's): the size the predictions are for
FULL_DOCS = {"mslr30k": 2_270_000, "yahoo": 473_134, "istella": 7_325_625}
FOLDS, CORES = 5, 2
# history lengths (rounds, epochs, trees) differing more than this across sizes: no power law
ERRATIC_STEPS = 4
# the tuned overlay's budget, the default of --trials and --cpu-seconds
TUNED = yaml.safe_load((REPO / "config" / "studies" / "tuned.yaml").read_text())["tune"]
WARMUP_QUERIES = 5
# a fit is stopped when the machine's available memory falls below this (neighbours' too)
MIN_AVAILABLE_GB = 3
# the next size is skipped when its fit is predicted above this multiple of the cap
SKIP_FACTOR = 1.5


# ---------------------------------------------------------------- the arithmetic (no rankstudy)

def power_law(ns, ts) -> tuple[float, float | None]:
    """(a, b) of t = a n^b by least squares on log t = log a + b log n; b is None for one point
    (then a = t / n, the linear guess, which the caller says is one)."""
    ns, ts = np.asarray(ns, float), np.asarray(ts, float)
    if len(ns) == 0:
        raise ValueError("no points")
    if len(ns) == 1 or np.ptp(np.log(ns)) == 0:
        return float(ts.mean() / ns.mean()), None
    b, log_a = np.polyfit(np.log(ns), np.log(ts), 1)
    return float(np.exp(log_a)), float(b)


def predict(a: float, b: float | None, n: float) -> float:
    """t at n; b None: linear (b = 1), which for every method measured here is a lower bound."""
    return a * n ** (1.0 if b is None else b)


def board_seconds(jobs: list[float], cores: int) -> float:
    """Wall seconds of independent single-core jobs on ``cores`` cores, packed perfectly: the
    total over the cores, but never less than the longest job."""
    return max(sum(jobs) / cores, max(jobs, default=0.0))


def tuned_trials_under_cap(fit_seconds: float, trials: int, cpu_seconds: float | None) -> int:
    """Trials a tuned job runs when its trials cost ``fit_seconds`` each: ``trials``, or fewer when
    the CPU cap is spent first (a trial starts while less than the cap is spent, so the first
    always runs: rankstudy.selection.tuning.run_trials)."""
    if cpu_seconds is None:
        return trials
    return max(1, min(trials, math.ceil(cpu_seconds / fit_seconds)))


# ---------------------------------------------------------------- the study and the data

def study_methods(study: Path, only: list[str] | None) -> dict[str, dict]:
    """The study's run methods, as the train job builds them (method_defaults merged)."""
    from rankstudy.pipeline.config import with_method_defaults

    config = yaml.safe_load(study.read_text())
    config = {"methods": config["methods"], "method_defaults": config.get("method_defaults") or {},
              "run_methods": config.get("run_methods") or list(config["methods"])}
    config = with_method_defaults(config)
    names = only or config["run_methods"]
    unknown = sorted(set(names) - set(config["methods"]))
    if unknown:
        raise SystemExit(f"unknown methods {unknown}; {study} has {sorted(config['methods'])}")
    return {name: config["methods"][name] for name in names}


def candidates(spec: dict) -> tuple[list[dict], int]:
    """The grid's candidates in order and the index of the reference (the middle one)."""
    from rankstudy.selection.spec import grid_candidates

    cands = grid_candidates(spec.get("grid"))
    return cands, (len(cands) - 1) // 2


def data_dir(workdir: Path, shape: str, k: int, fold: int = 1) -> Path:
    return workdir / "data" / (f"{shape}-1of{k}" + ("" if fold == 1 else f"-fold{fold}"))


def prepare(workdir: Path, shape: str, k: int, seed: int = 0, fold: int = 1) -> dict:
    """Fold ``fold`` (1: this benchmark's) of the synthetic data set at 1/k of its queries, as the
    leaderboard's jobs see it: training queries without a relevant document dropped, QueryLevelNorm
    (min-max per query); written once as .npz, with its sizes in meta.json."""
    folder = data_dir(workdir, shape, k, fold)
    meta_file = folder / "meta.json"
    if meta_file.exists():
        return json.loads(meta_file.read_text())
    from rankstudy.data.cleaning import drop_queries_without_relevant
    from rankstudy.data.rotation import fold_splits
    from rankstudy.data.synthetic import make_parts
    from rankstudy.features.normalize import Normalizer

    size = dict(SHAPES[shape], n_queries=round(SHAPES[shape]["n_queries"] / k))
    start = time.perf_counter()
    splits = fold_splits(make_parts(seed, **size), fold)
    train, dropped = drop_queries_without_relevant(splits["train"])
    norm = Normalizer("querylevel")
    folder.mkdir(parents=True, exist_ok=True)
    meta = {"shape": shape, "k": k, "fold": fold, "generator": size, "dropped_train_queries": dropped}
    for name, split in (("train", train), ("vali", splits["vali"])):
        norm.transform(split).to_npz(folder / f"{name}.npz")
        meta[f"{name}_queries"], meta[f"{name}_docs"] = int(split.n_queries), int(len(split.y))
    meta["seconds"] = round(time.perf_counter() - start, 1)
    meta_file.write_text(json.dumps(meta, indent=1))
    return meta


# ---------------------------------------------------------------- one fit, in a child process

def _status(key: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1]) * 1024
    raise KeyError(key)


def child(args: argparse.Namespace) -> None:
    """Fit one method on one size and print its figures as one JSON line."""
    from rankstudy.data.rankdata import RankData
    from rankstudy.evaluation import metrics
    from rankstudy.rankers.registry import make_ranker
    from rankstudy.util.threads import use_job_threads

    use_job_threads(1)
    kind, params = args.kind, json.loads(args.params)
    folder = Path(args.data)
    # into anonymous memory (the cache is a memory map): the baseline below then holds the splits,
    # and the fit's growth is what it allocates, not the file pages it touches
    train, vali = (RankData.from_npz(folder / f"{s}.npz") for s in ("train", "vali"))
    train, vali = train.with_features(np.array(train.X)), vali.with_features(np.array(vali.X))
    warm = time.perf_counter()
    try:
        make_ranker(kind, params).fit(train.query_range(0, WARMUP_QUERIES), vali.query_range(0, WARMUP_QUERIES))
        warm_problem = ""
    except Exception as exc:  # a method that cannot fit 5 queries may still fit the split
        warm_problem = f"{type(exc).__name__}: {exc}"[:200]
    warm_s = time.perf_counter() - warm
    import gc

    gc.collect()
    Path("/proc/self/clear_refs").write_text("5")  # the high-water mark starts again from now
    rss0 = _status("VmRSS")
    print("FIT_START", flush=True)
    load0 = os.getloadavg()[0]
    wall, cpu = time.perf_counter(), time.process_time()
    ranker = make_ranker(kind, params)
    with np.errstate(over="ignore", invalid="ignore"):
        ranker.fit(train, vali)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    growth = max(_status("VmHWM") - rss0, 0)
    start = time.perf_counter()
    scores = ranker.predict(vali)
    predict_s = time.perf_counter() - start
    ndcg = float("nan")
    if np.isfinite(scores).all():
        ndcg = metrics.mean_metrics(metrics.per_query(scores, vali.y, vali.offsets, ["ndcg@10"]))["ndcg@10"]
    print("RESULT " + json.dumps({
        "status": "ok", "wall_s": round(wall, 3), "cpu_s": round(cpu, 3), "rss_growth_mb": round(growth / 2**20, 1),
        "rss_base_mb": round(rss0 / 2**20, 1), "predict_s": round(predict_s, 3), "vali_ndcg10": round(ndcg, 5),
        "history": len(getattr(ranker, "history_", None) or []), "warmup_s": round(warm_s, 2),
        "warmup_problem": warm_problem, "load_start": round(load0, 2), "load_end": round(os.getloadavg()[0], 2),
    }), flush=True)


def _proc(pid: int) -> tuple[float, int]:
    """(CPU seconds, RSS bytes) of a running process, from /proc (its CPU: user and system time of
    all its threads, as /proc/PID/stat sums them)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    cpu = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime, stime
    rss = int(fields[21]) * os.sysconf("SC_PAGE_SIZE")
    return cpu, rss


def _available() -> int:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) * 1024
    raise KeyError("MemAvailable")


def run_child(kind: str, params: dict, data: Path, cap: float, max_gb: float, wall_guard: float = 4,
              load_timeout: float = 1800) -> dict:
    """Run one fit in a child process and ``watch`` it (``cap`` CPU-seconds of fitting, a wall
    guard of ``wall_guard`` times that)."""
    cmd = [sys.executable, __file__, "--child", "--kind", kind, "--params", json.dumps(params), "--data", str(data)]
    return watch(cmd, cap, max_gb, wall_guard * cap, load_timeout)


def watch(cmd: list[str], cap: float, max_gb: float, wall_cap: float, load_timeout: float = 1800,
          grace: float = 30) -> dict:
    """Run ``cmd`` (a fit that prints FIT_START, then its RESULT line) and stop it when its fit has
    spent ``cap`` CPU-seconds (user and system, all its threads: the fit's cost, which the machine's
    other load does not stretch), or ``wall_cap`` seconds of wall have passed (a guard for a child
    that hangs asleep, spending no CPU), or its RSS grows ``max_gb`` above what it held at the start
    of the fit, or the machine is left with under MIN_AVAILABLE_GB (the machine is shared: no
    neighbour is to be killed by the OOM killer). A stopped fit says which stopped it (stopped_by:
    cpu, wall or memory)."""
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines: list[str] = []
    started = threading.Event()

    def read() -> None:
        for line in proc.stdout:
            lines.append(line.rstrip("\n"))
            if line.startswith("FIT_START"):
                started.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    err: list[str] = []
    errs = threading.Thread(target=lambda: err.extend(proc.stderr), daemon=True)
    errs.start()
    t0 = time.perf_counter()
    while not started.is_set() and proc.poll() is None and time.perf_counter() - t0 < load_timeout:
        started.wait(1)
    if not started.is_set():
        timed_out = proc.poll() is None
        proc.kill()
        proc.wait()
        errs.join(5)
        said = "".join(err)[-500:].strip()
        if timed_out:  # still loading the splits or in its warm-up fit on 5 queries: say so, not an empty tail
            said = (f"not started within {load_timeout:g} s of loading the splits and the warm-up fit on 5 queries"
                    + (f"; its last output: {said}" if said else ""))
        return {"status": "error", "problem": "no fit started: " + said}
    fit0 = time.perf_counter()
    cpu0, rss0 = _proc(proc.pid)
    caps = {"cpu_cap_s": cap, "wall_cap_s": wall_cap}
    peak, stop = rss0, None
    while proc.poll() is None:
        wall = time.perf_counter() - fit0
        try:
            cpu, rss = _proc(proc.pid)
        except (FileNotFoundError, ProcessLookupError, IndexError):
            break  # it just ended
        spent = cpu - cpu0
        peak = max(peak, rss)
        # the result line follows the fit's prediction on vali: the grace lets it come
        if spent > cap + grace:
            stop = {"status": "capped", "stopped_by": "cpu",
                    "problem": f"stopped after {spent:.0f} CPU-s of fitting ({wall:.0f} s wall), over the "
                               f"{cap:g} CPU-s cap"}
        elif wall > wall_cap + grace:
            stop = {"status": "capped", "stopped_by": "wall",
                    "problem": f"stopped by the {wall_cap:g} s wall guard after {wall:.0f} s of fitting "
                               f"({spent:.0f} CPU-s)"}
        elif rss - rss0 > max_gb * 2**30 or _available() < MIN_AVAILABLE_GB * 2**30:
            stop = {"status": "memory", "stopped_by": "memory",
                    "problem": f"stopped after {spent:.0f} CPU-s ({wall:.0f} s wall) at {(rss - rss0) / 2**30:.1f} GiB "
                               f"above its start (limit {max_gb:g} GiB; machine's available "
                               f"{_available() / 2**30:.1f} GiB)"}
        if stop:
            proc.kill()
            proc.wait()
            return {**stop, **caps, "wall_s": round(wall, 1), "cpu_s": round(spent, 1),
                    "rss_growth_mb": round((peak - rss0) / 2**20, 1)}
        time.sleep(0.2)
    proc.wait()
    reader.join(5)
    result = next((json.loads(line[len("RESULT "):]) for line in lines if line.startswith("RESULT ")), None)
    if result is None:
        return {"status": "error", "problem": "".join(err)[-800:]}
    # finished between the cap and the kill: over the cap all the same (a fit that ended past the
    # wall guard is kept: its CPU is measured, and the guard is only there for a child that hangs)
    if result["cpu_s"] > cap:
        result.update(status="capped", stopped_by="cpu", problem=f"finished after {result['cpu_s']:.0f} CPU-s, "
                                                                 f"over the {cap:g} CPU-s cap")
    return {**result, **caps}


# ---------------------------------------------------------------- the run

def load_fits(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()] if path.exists() else []


def key(rec: dict) -> tuple:
    return rec["shape"], rec["k"], rec["method"], rec["candidate"]


def reference_points(fits: list[dict], shape: str, method: str) -> list[dict]:
    return sorted((f for f in fits if f["shape"] == shape and f["method"] == method and f["reference"]
                   and f["status"] in ("ok", "capped", "memory")), key=lambda f: f["train_docs"])


# how a stopped fit's floor grows where the method's cost is known to grow faster than linearly:
# StructRank's Nadaraya-Watson scorer weighs every row against every training document
# (docs/methods.md, StructRank at scale), so its CPU is quadratic in the training documents
FLOOR_EXPONENT = {("structrank", "cpu_s"): 2.0}


def erratic_steps(ok: list[dict]) -> list[int] | None:
    """The history lengths (rounds, epochs) of a method's finished fits, by size, when they jump
    between sizes (AdaRank: 8 rounds at one size, its 500 at the next; early stopping): no power
    law in n then, so the report and the footprints grow the largest point linearly; else None."""
    steps = [p.get("history") or 0 for p in ok]
    return steps if len(ok) > 1 and min(steps) > 0 and max(steps) > ERRATIC_STEPS * min(steps) else None


def _growth(points: list[dict], value: str, kind: str = "") -> dict | None:
    """A footprint's growth (rankstudy.rankers.footprint.Growth as data) of ``value`` over the
    training documents: the power law through the fits that ended, and the floor of the largest
    one stopped at a cap (it took at least that, and grows at least linearly)."""
    ok = [p for p in points if p["status"] == "ok" and p.get(value) is not None]
    stopped = [p for p in points if p["status"] in ("capped", "memory") and p.get(value) is not None]
    if not ok and not stopped:
        return None
    out = {"a": None, "b": None}
    if ok:
        a, b = power_law([p["train_docs"] for p in ok], [max(p[value], 1e-3) for p in ok])
        out.update(a=float(a), b=None if b is None else float(b))
    if stopped:
        worst = max(stopped, key=lambda p: p[value] / p["train_docs"])
        out.update(floor_n=int(worst["train_docs"]), floor_y=float(worst[value]))
        if (kind, value) in FLOOR_EXPONENT:
            out["floor_b"] = FLOOR_EXPONENT[kind, value]
    return out


def footprints(fits: list[dict], methods: dict[str, dict], shape: str, measured: str) -> dict:
    """config/footprints.yaml's entries for ``shape``: each method's CPU-seconds and RSS growth of
    one fit (its reference candidate) as they grow with the training documents."""
    out = {}
    for name, spec in methods.items():
        points = reference_points(fits, shape, name)
        ok = [p for p in points if p["status"] == "ok"]
        if erratic_steps(ok):  # as the report reads it: linear from the largest fit (a lower bound: b None)
            points = [p for p in points if p["status"] != "ok"] + ok[-1:]
        cpu = _growth([{**p, "cpu_s": p.get("cpu_s", p["wall_s"])} for p in points], "cpu_s", spec["kind"])
        if cpu is None:
            continue
        out[name] = {"kind": spec["kind"], "params": spec.get("params") or {}, "shape": shape, "measured": measured,
                     "sizes": [int(p["train_docs"]) for p in points], "cpu_seconds": cpu,
                     "rss_growth_mb": _growth(points, "rss_growth_mb")}
    return out


def write_footprints(path: Path, entries: dict) -> None:
    """Merge ``entries`` into the footprints file (other shapes' entries of a method stay)."""
    data = yaml.safe_load(path.read_text()) if path.exists() else None
    data = data or {}
    methods = data.setdefault("methods", {})
    for name, entry in entries.items():
        key = name if entry["shape"] == "mslr30k" else f"{name}@{entry['shape']}"
        methods[key] = entry
    header = ("# One fit's CPU-seconds and peak RSS growth of each leaderboard method as they grow with the\n"
              "# training documents, measured on synthetic folds shaped like MSLR-WEB30K, Yahoo or Istella:\n"
              "# written by `python benchmarks/bench_board_cost.py --write-footprints config/footprints.yaml`,\n"
              "# read by the config check that refuses a method one node cannot hold (rankstudy.rankers.footprint).\n")
    path.write_text(header + yaml.safe_dump(data, sort_keys=False))


def draws(kind: str, params: dict, count: int, seed: int) -> list[dict]:
    """``count`` parameter sets drawn at random from the method's declared search space."""
    if count <= 0:
        return []
    import optuna

    from rankstudy.selection.tuning import tuning_space

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    space = tuning_space(kind, params)
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=seed))
    out = []
    for _ in range(count):
        trial = study.ask()
        out.append({n: s.suggest(trial, n) for n, s in space.items()})
        study.tell(trial, 0.0)
    return out


def run(args: argparse.Namespace, methods: dict[str, dict]) -> None:
    from rankstudy.pipeline.tuned import draws_anything
    from rankstudy.selection.spec import training_params

    out = args.workdir / "fits.jsonl"
    fits = load_fits(out)
    done = {key(f) for f in fits}
    sizes = sorted(args.sizes, reverse=True)  # 1/16 first
    for k in sizes:
        meta = prepare(args.workdir, args.shape, k)
        print(f"{args.shape} 1/{k}: {meta['train_queries']:,} training queries, {meta['train_docs']:,} documents "
              f"(vali {meta['vali_docs']:,})", flush=True)
        smallest = k == sizes[0] and not args.reference_only
        for name, spec in methods.items():
            cands, ref = candidates(spec)
            base = training_params(spec, seed=0, rel_threshold=1)
            order = [ref] + [i for i in range(len(cands)) if i != ref] if smallest else [ref]
            jobs = [(f"grid{i}", {**base, **cands[i]}, i == ref) for i in order]
            if smallest and args.trial_draws and draws_anything(spec):
                jobs += [(f"draw{j}", {**base, **values}, False)
                         for j, values in enumerate(draws(spec["kind"], base, args.trial_draws, seed=0), 1)]
            for cand, params, is_ref in jobs:
                rec = {"shape": args.shape, "k": k, "method": name, "kind": spec["kind"], "candidate": cand,
                       "reference": is_ref, "params": {p: v for p, v in params.items() if p not in base or
                                                       base[p] != v}, "train_docs": meta["train_docs"]}
                if key(rec) in done:
                    continue
                skip = skip_reason(fits, args.shape, name, meta["train_docs"], args.max_seconds, args.max_gb,
                                   None if is_ref else cand)
                if skip:
                    rec.update(status="skipped", problem=skip)
                else:
                    print(f"  {name} [{cand}] 1/{k} ...", end=" ", flush=True)
                    rec.update(run_child(spec["kind"], params, data_dir(args.workdir, args.shape, k), args.max_seconds,
                                         args.max_gb, args.wall_guard))
                rec["at"] = time.strftime("%Y-%m-%d %H:%M:%S")
                shown = (f"{rec['cpu_s']:.1f} CPU-s, {rec['wall_s']:.1f} s, +{rec['rss_growth_mb']:.0f} MB, "
                         f"vali NDCG@10 {rec['vali_ndcg10']:.4f}" if rec["status"] == "ok" else rec.get("problem", ""))
                print(f"  {name} [{cand}] 1/{k}: {rec['status']} {shown}" if skip else f"{rec['status']} {shown}",
                      flush=True)
                fits.append(rec)
                done.add(key(rec))
                with open(out, "a") as f:
                    f.write(json.dumps(rec) + "\n")


def skip_reason(fits: list[dict], shape: str, method: str, n: int, cap: float, max_gb: float,
                other: str | None) -> str:
    """Why a fit is not run, all in CPU-seconds against the CPU cap: its method's reference fit
    was stopped at the memory limit at a smaller size (or, for a non-reference candidate, at this
    one), or stopped at a cap after CPU that, grown to ``n`` as a floor (at least linearly), is
    already over the cap; or its CPU at ``n`` is predicted above SKIP_FACTOR x the cap, or its
    memory above the limit, from the method's smaller sizes."""
    points = reference_points(fits, shape, method)
    stopped = [p for p in points if p["status"] in ("capped", "memory") and p["train_docs"] <= n]
    memory = [p for p in stopped if p["status"] == "memory"]
    if memory:
        return f"its reference fit was over the {max_gb:g} GiB memory limit at 1/{memory[0]['k']}"
    # a fit stopped by the wall guard (or by the wall cap of older runs) may have spent little CPU:
    # only what it spent, grown to n, says it would be over this cap
    for p in stopped:
        spent = p.get("cpu_s", p["wall_s"])
        floor = spent * (n / p["train_docs"]) ** FLOOR_EXPONENT.get((p["kind"], "cpu_s"), 1.0)
        if floor >= cap:
            return (f"its reference fit was stopped at 1/{p['k']} after {spent:.0f} CPU-s"
                    + (f" (by the wall {'guard' if p.get('stopped_by') == 'wall' else 'cap'})"
                       if p.get("stopped_by") != "cpu" else "")
                    + (f", at least {floor:.0f} CPU-s here" if p["train_docs"] < n else "")
                    + f": over the {cap:g} CPU-s cap")
    if other and other.startswith("draw"):  # draws only where the reference is cheap: a trial can be dearer
        ref = next((p for p in points if p["train_docs"] == n), None)
        return "" if ref and ref["status"] == "ok" and ref["cpu_s"] <= cap / 3 else \
            f"its reference fit took over a third of the {cap:g} CPU-s cap"
    if other:
        return ""
    ok = [p for p in points if p["status"] == "ok" and p["train_docs"] < n]
    if not ok:
        return ""
    a, b = power_law([p["train_docs"] for p in ok], [p["cpu_s"] for p in ok])
    guess = predict(a, b, n)
    if guess > SKIP_FACTOR * cap:
        return (f"predicted {guess:.0f} CPU-s (from {len(ok)} smaller size(s)), over {SKIP_FACTOR:g}x the "
                f"{cap:g} CPU-s cap")
    a, b = power_law([p["train_docs"] for p in ok], [max(p["rss_growth_mb"], 1.0) for p in ok])
    memory = predict(a, b, n) / 1024
    if memory > max_gb:
        return f"predicted {memory:.1f} GiB above its start (from {len(ok)} smaller size(s)), over the {max_gb:g} GiB limit"
    return ""


# ---------------------------------------------------------------- the report

def method_rows(fits: list[dict], methods: dict[str, dict], shape: str, full_docs: float, trials: int,
                borrow: str | None = None, cpu_seconds: float | None = None) -> list[dict]:
    """Per method: the measured reference fits, the power law, the predicted full-size fit and jobs.
    A method with fewer than two sizes measured takes b, and its grid and trial ratios when it has
    none, from the ``borrow`` shape's rows (the same method on other-shaped data)."""
    from rankstudy.pipeline.tuned import draws_anything
    from rankstudy.rankers.footprint import Growth, largest_two

    lent = {r["method"]: r for r in method_rows(fits, methods, borrow, full_docs, trials, cpu_seconds=cpu_seconds)} \
        if borrow and borrow != shape else {}
    rows = []
    for name, spec in methods.items():
        mine = [f for f in fits if f["shape"] == shape and f["method"] == name]
        if not mine:
            continue
        points = reference_points(fits, shape, name)
        ok = [p for p in points if p["status"] == "ok"]
        row = {"method": name, "kind": spec["kind"], "sizes": {p["k"]: p for p in points},
               "skipped": sorted({f["k"] for f in mine if f["status"] == "skipped" and f["reference"]}),
               "borrowed": []}
        other = lent.get(name)
        smallest = max((f["k"] for f in mine), default=None)
        at_small = [f for f in mine if f["k"] == smallest]
        grid = [f for f in at_small if f["candidate"].startswith("grid")]
        ref = next((f for f in grid if f["reference"]), None)
        n_cands = len(candidates(spec)[0])
        # the default job's fits over the reference fit, where all were measured (else: each as dear)
        if ref and ref["status"] == "ok" and all(f["status"] == "ok" for f in grid) and len(grid) == n_cands:
            row["grid_ratio"], row["grid_ratio_measured"] = sum(f["cpu_s"] for f in grid) / ref["cpu_s"], True
        elif n_cands > 1 and other and other["grid_ratio_measured"]:
            row["grid_ratio"], row["grid_ratio_measured"] = other["grid_ratio"], True
            row["borrowed"].append("grid ratio")
        else:
            row["grid_ratio"], row["grid_ratio_measured"] = float(n_cands), n_cands == 1
        drawn = [f for f in at_small if f["candidate"].startswith("draw")]
        if ref and ref["status"] == "ok" and drawn and all(f["status"] == "ok" for f in drawn):
            row["trial_ratio"] = float(np.mean([ref["cpu_s"]] + [f["cpu_s"] for f in drawn])) / ref["cpu_s"]
        elif other and other["trial_ratio"]:
            row["trial_ratio"] = other["trial_ratio"]
            row["borrowed"].append("trial ratio")
        else:
            row["trial_ratio"] = None  # a trial taken as dear as the reference fit
        row["vali_ndcg10"] = ok[-1]["vali_ndcg10"] if ok else float("nan")
        # a fit stopped at size n took at least what it had spent, and grows at least linearly
        # (faster where FLOOR_EXPONENT knows the method's cost does)
        stopped = [p for p in points if p["status"] in ("capped", "memory")]
        grows = FLOOR_EXPONENT.get((spec["kind"], "cpu_s"), 1.0)
        floor = max((p.get("cpu_s", p["wall_s"]) * (full_docs / p["train_docs"]) ** grows for p in stopped),
                    default=0.0)
        memory = [p for p in stopped if p["status"] == "memory"]
        mem_floor = max((p["rss_growth_mb"] / 1024 * full_docs / p["train_docs"] for p in memory), default=0.0)
        row["out_of_memory"] = bool(memory)
        row["erratic_steps"] = erratic_steps(ok)
        if ok:
            ns, ts, ms = ([p["train_docs"] for p in ok], [p["cpu_s"] for p in ok],
                          [max(p["rss_growth_mb"], 1.0) for p in ok])
            if row["erratic_steps"]:
                ns, ts, ms = ns[-1:], ts[-1:], ms[-1:]
            a, b = power_law(ns, ts)
            ma, mb = power_law(ns, ms)
            if b is None and other and other["b"] is not None and other["n_points"] >= 2 and not other["lower_bound"]:
                # one point here: the other shape's growth through it (unless that is a bound: stopped at a size)
                b, mb = other["b"], other["mem_b"]
                a, ma = ts[-1] / ns[-1] ** b, ms[-1] / ns[-1] ** mb
                row["borrowed"].append("b")
            # CPU at least linear past the largest size measured, as rankstudy.rankers.footprint reads it
            # (two early-stopped fits may fit b < 1)
            linear = predict(a, b, max(ns)) * full_docs / max(ns)
            row.update(a=a, b=b, n_points=len(ok), fit_s=max(predict(a, b, full_docs), linear, floor),
                       lower_bound=b is None or bool(stopped))
            # memory at least the line through the two largest sizes, as rankstudy.rankers.footprint reads it
            memory_law = Growth(ma, mb, secant=largest_two(ns))
            row.update(mem_b=mb, mem_gb=max(memory_law.at(full_docs) / 1024, mem_floor))
        elif stopped:  # stopped at the smallest size: a lower bound only
            row.update(a=None, b=None, n_points=0, fit_s=floor, lower_bound=True, mem_b=None,
                       mem_gb=mem_floor if memory else float("nan"))
        else:
            row.update(a=None, b=None, n_points=0, fit_s=float("nan"), lower_bound=True, mem_b=None,
                       mem_gb=float("nan"))
        row["default_job_s"] = row["fit_s"] * row["grid_ratio"]
        trial_s = row["fit_s"] * (row["trial_ratio"] or 1.0)
        # a method with nothing to draw has no tuned job: the tuned board runs it once, as its default
        row["draws"] = draws_anything(spec)
        tuned = trials if row["draws"] else 0
        row["tuned_job_s"] = trial_s * tuned
        # at the study's budget: the trials that start before the CPU cap is spent
        row["capped_trials"] = (tuned_trials_under_cap(trial_s, tuned, cpu_seconds) if tuned and np.isfinite(trial_s)
                                else tuned)
        row["capped_job_s"] = trial_s * row["capped_trials"]
        rows.append(row)
    return rows


def pruned_ratios(paths: list[Path], shape: str, pruners: list[str]) -> dict[str, dict]:
    """Per method, what the first of ``pruners`` measured for it saved in bench_pruning.py's
    studies (its --out files; a pruner as bench_pruning writes it, a name or JSON): the median
    over folds of CPU pruned / unpruned and of the best's gap (unpruned - pruned), from the folds
    of ``shape`` where there are some, else from every fold (the LETOR data sets): measured on
    that data at the same trials, not at the full fold's size, which the report says. A study on a
    train fraction is set against its unpruned one by whole calls' CPU (its refit included)."""
    pairs: dict[tuple[str, str], list[tuple[str, dict, dict]]] = {}
    for path in paths:  # a pruned study against the unpruned one of its own run (the same file)
        records = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        for rec in records:
            if rec["pruner"] not in pruners:
                continue
            base = next((r for r in records if r["pruner"] == "none" and r["fold"] == rec["fold"]
                         and r["method"] == rec["method"] and r["trials"] == rec["trials"]), None)
            if base and base["cpu_seconds"] > 0:
                pairs.setdefault((rec["method"], rec["pruner"]), []).append((rec["fold"], base, rec))
    out = {}
    for (method, pruner), found in sorted(pairs.items(), key=lambda item: pruners.index(item[0][1])):
        if method in out:
            continue
        same = [f for f in found if f[0].startswith(f"{shape}-")]
        used = same or found
        # a study on a train fraction refits its best on the whole fold after its trials: whole calls
        spent = ["call_cpu_seconds" if p.get("train_fraction", 1) < 1 else "cpu_seconds" for _, _, p in used]
        out[method] = {"ratio": float(np.median([p[k] / b[k] for (_, b, p), k in zip(used, spent)])),
                       "gap": float(np.median([b["best"] - p["best"] for _, b, p in used])),
                       "folds": len(used), "on": f"{shape}-shaped" if same else "LETOR", "pruner": pruner}
    return out


def fmt_s(s: float) -> str:
    if not np.isfinite(s):
        return "-"
    return f"{s:,.0f}" if s >= 10 else f"{s:.1f}"


def fmt_h(s: float, lower: bool = False) -> str:
    if not np.isfinite(s):
        return "-"
    h = s / 3600
    text = f"{h:,.0f}" if h >= 100 else f"{h:.1f}" if h >= 1 else f"{h:.2f}"
    return (">" if lower else "") + text


def report(args: argparse.Namespace, methods: dict[str, dict]) -> str:
    fits = load_fits(args.workdir / "fits.jsonl")
    full = args.full_docs or FULL_DOCS[args.shape]
    cap = args.cpu_seconds or None
    rows = method_rows(fits, methods, args.shape, full, args.trials, args.borrow, cap)
    sizes = sorted({f["k"] for f in fits if f["shape"] == args.shape}, reverse=True)
    docs = {k: next(f["train_docs"] for f in fits if f["shape"] == args.shape and f["k"] == k) for k in sizes}
    head = ["method"] + [f"CPU-s 1/{k} ({docs[k] / 1e3:,.0f}k docs)" for k in sizes] + [
        "b", "vali NDCG@10", "fit at full size (CPU-s)", "default job / fold (h)", "tuned job / fold (h)",
        "default board, 2 cores (h)", "tuned board, 2 cores (h)", "peak RSS growth: largest measured, predicted full (GB)"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        cells = [r["method"]]
        for k in sizes:
            p = r["sizes"].get(k)
            if p is None:
                cells.append("skipped" if k in r["skipped"] else "-")
            elif p["status"] == "capped":
                # the CPU it had spent: its own cap (the caps differ by size), or less if the wall guard
                # (or an older run's wall cap) stopped it
                how = " by the wall guard" if p.get("stopped_by") == "wall" else ""
                cells.append(f">{p.get('cpu_s', p['wall_s']):.0f} (stopped{how})")
            elif p["status"] == "memory":
                cells.append(f"over {args.max_gb:g} GiB (stopped at {p.get('cpu_s', p['wall_s']):,.0f})")
            else:
                cells.append(fmt_s(p["cpu_s"]) + (f" ({p['wall_s'] / p['cpu_s']:.1f}x wall)"
                                                   if p["wall_s"] > 1.5 * p["cpu_s"] else ""))
        lower = r["lower_bound"]
        cells.append(f"- (rounds {' -> '.join(map(str, r['erratic_steps']))}: linear from the largest)"
                     if r["erratic_steps"] and r["b"] is None else
                     "-" if r["b"] is None else f"{r['b']:.2f}" + (f" ({args.borrow}'s)" if "b" in r["borrowed"] else
                                                                  f" ({r['n_points']} pts)" if r["n_points"] < len(sizes) else ""))
        cells.append(f"{r['vali_ndcg10']:.3f}" if np.isfinite(r["vali_ndcg10"]) else "-")
        cells.append(("≥ " if lower else "") + fmt_s(r["fit_s"]))
        cells.append(fmt_h(r["default_job_s"], lower))
        cells.append(fmt_h(r["tuned_job_s"], lower))
        cells.append(fmt_h(board_seconds([r["default_job_s"]] * FOLDS, CORES), lower))
        cells.append(fmt_h(board_seconds([r["tuned_job_s"]] * FOLDS, CORES), lower))
        measured = max((p["rss_growth_mb"] for p in r["sizes"].values() if p["status"] == "ok"), default=float("nan"))
        predicted = ("≥ " if r["out_of_memory"] else "") + (f"{r['mem_gb']:.1f}" if np.isfinite(r["mem_gb"]) else "-")
        cells.append((f"{measured / 1024:.2f}" if np.isfinite(measured) else "-") + ", " + predicted)
        lines.append("| " + " | ".join(cells) + " |")
    # the whole board on 2 cores and on N nodes of 2 cores
    nodes = [f"{n} node{'s' * (n > 1)} x {CORES} cores" + (" (this machine)" if n == 1 else "") for n in args.nodes]
    board = ["", "| board (5 folds), hours | " + " | ".join(nodes) + " | longest job |",
             "|" + "---|" * (len(args.nodes) + 2)]
    pruned = pruned_ratios(args.pruning, args.shape, args.pruner) if args.pruning else {}
    for r in rows:  # a tuned job with the pruner: its CPU times what the pruner saved in bench_pruning's studies
        r["pruned_job_s"] = r["tuned_job_s"] * pruned.get(r["method"], {"ratio": 1.0})["ratio"]
    known = [r for r in rows if np.isfinite(r["fit_s"])]
    for label, cols in (("default (one fit per grid candidate)", ["default_job_s"]),
                        (f"tuned ({args.trials} trials x one fit)", ["tuned_job_s"]),
                        *([(f"tuned at the study's budget ({args.trials} trials or {cap:g} CPU-s: "
                            f"{sum(r['capped_trials'] == 1 for r in known)} of {len(known)} methods one trial)",
                            ["capped_job_s"])] if cap else []),
                        *([(f"tuned ({args.trials} trials), pruned where measured "
                            f"({len(pruned)} methods; the others unpruned)", ["pruned_job_s"])] if pruned else []),
                        ("default and tuned", ["default_job_s", "tuned_job_s"])):
        for short in (None, args.job_hours):
            # the board again without the methods whose one job on one fold is longer than --job-hours
            kept = [r for r in known if short is None or max(r[c] for c in cols) <= short * 3600]
            jobs = [r[c] for r in kept for c in cols for _ in range(FOLDS)]
            longest = max(((r[c], r["method"]) for r in kept for c in cols), default=(float("nan"), "-"))
            cells = [fmt_h(board_seconds(jobs, CORES * n), any(r["lower_bound"] for r in kept)) for n in args.nodes]
            name = label if short is None else f"{label}: only methods with jobs under {short:g} h ({len(kept)})"
            board.append(f"| {name} | " + " | ".join(cells) + f" | {fmt_h(longest[0])} h ({longest[1]}) |")
    meta = {k: json.loads((data_dir(args.workdir, args.shape, k) / "meta.json").read_text()) for k in sizes}
    once = [r["method"] for r in rows if not r["draws"]]
    text = "\n".join([
        f"# Board cost at scale: {args.shape}-shaped synthetic folds",
        "",
        f"Fold 1 at 1/k of {args.shape}'s queries ({SHAPES[args.shape]}): "
        + "; ".join(f"1/{k}: {m['train_queries']:,} training queries, {m['train_docs']:,} documents, vali "
                    f"{m['vali_docs']:,}" for k, m in meta.items())
        + f". Predictions at {full:,} training documents. CPU seconds of one fit on one thread (the reference "
          f"candidate); b: the exponent of t = a n^b; a job: one method on one fold (default: its grid's "
          f"candidates; tuned: {args.trials} trials"
        + ("" if not args.trial_draws else f", each as dear as the mean of the default and {args.trial_draws} random draws from the method's space where measured")
        + f"); boards: 5 folds on {CORES} cores, max(sum of jobs / cores, longest job). '>': a lower bound "
          f"(a fit stopped at the {args.max_seconds:g} CPU-s cap or by the wall guard: the CPU it had spent; or "
          f"a single point, taken as linear).",
        "",
        *lines,
        *board,
        *(["", f"No tuned job (nothing to draw: the tuned board runs them once, as their default): "
               f"{', '.join(once)}."] if once else []),
        *(["", "Pruned: a tuned job's CPU times the median CPU pruned / unpruned of "
               f"`bench_pruning.py`'s studies at {args.trials} trials (same sampler and seed), on the folds named; "
               f"gap: the median of the unpruned best validation NDCG@10 minus the pruned one there.", "",
           "| method | pruner | CPU pruned / unpruned | best gap | measured on |", "|---|---|---|---|---|",
           *(f"| {m} | `{v['pruner']}` | {v['ratio']:.2f} | {v['gap']:+.4f} | {v['folds']} {v['on']} "
             f"fold{'s' * (v['folds'] > 1)} |"
             for m, v in pruned.items())] if pruned else []),
    ])
    (args.workdir / "board-cost.md").write_text(text + "\n")
    import pandas as pd

    flat = [{k: v for k, v in r.items() if k != "sizes"} | {f"cpu_s_1of{k}": (p["cpu_s"] if p["status"] == "ok" else None)
                                                            for k, p in r["sizes"].items()} for r in rows]
    pd.DataFrame(flat).to_csv(args.workdir / "board-cost.csv", index=False)
    return text


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--study", type=Path, default=REPO / "config" / "studies" / "leaderboard.yaml")
    parser.add_argument("--methods", nargs="+", help="the study's methods to time (default: its run_methods)")
    parser.add_argument("--shape", choices=sorted(SHAPES), default="mslr30k")
    parser.add_argument("--sizes", type=int, nargs="+", default=[16, 8, 4], help="k of 1/k of the data set's queries")
    parser.add_argument("--max-seconds", type=float, default=600,
                        help="a fit's cap: CPU-seconds of fitting (user and system, all the child's threads), so "
                             "the machine's other load does not stop a cheap fit; a fit is also stopped after "
                             "--wall-guard times this in wall seconds (a child that hangs asleep spends no CPU)")
    parser.add_argument("--wall-guard", type=float, default=4, metavar="FACTOR",
                        help="the wall-time guard, a multiple of --max-seconds (default 4: a fit that gets a "
                             "quarter of a core or more is stopped by its CPU cap, not by this)")
    parser.add_argument("--max-gb", type=float, default=12,
                        help="a fit's cap on its RSS growth (GiB), for a shared machine: it is stopped above it")
    parser.add_argument("--trials", type=int, default=TUNED["trials"],
                        help="trials of a tuned job (config/studies/tuned.yaml's)")
    parser.add_argument("--cpu-seconds", type=float, default=TUNED["cpu_seconds"],
                        help="a tuned job's CPU cap (config/studies/tuned.yaml's; 0: none): the board's "
                             "'study's budget' row runs the trials that start before it is spent")
    parser.add_argument("--trial-draws", type=int, default=0,
                        help="parameter sets drawn from each method's search space and fitted at the smallest size")
    parser.add_argument("--reference-only", action="store_true",
                        help="only the reference candidate at every size (the grid and trial ratios then come from "
                             "--borrow's fits)")
    parser.add_argument("--borrow", default="mslr30k", metavar="SHAPE",
                        help="with fewer than two sizes of a method measured, its exponent b (and grid and trial "
                             "ratios) from this shape's fits in the same workdir")
    parser.add_argument("--nodes", type=int, nargs="+", default=[1, 4, 16])
    parser.add_argument("--job-hours", type=float, default=24, help="the board again without jobs longer than this")
    parser.add_argument("--full-docs", type=float, help="training documents of the full fold (default: the shape's)")
    parser.add_argument("--workdir", type=Path, default=Path(tempfile.gettempdir()) / "board-cost")
    parser.add_argument("--report-only", action="store_true", help="tabulate the workdir's fits.jsonl")
    parser.add_argument("--pruning", type=Path, nargs="+", metavar="JSONL",
                        help="bench_pruning.py's --out files: the board again with each tuned job's CPU times what "
                             "--pruner saved there for that method (its folds of --shape if any, else LETOR's)")
    parser.add_argument("--pruner", nargs="+", default=["hyperband"],
                        help="the pruners of --pruning's records to read, as bench_pruning writes them (a name or "
                             "JSON): for each method the first one measured for it")
    parser.add_argument("--write-footprints", type=Path, metavar="FILE",
                        help="also write each method's measured growth there (config/footprints.yaml)")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--kind", help=argparse.SUPPRESS)
    parser.add_argument("--params", help=argparse.SUPPRESS)
    parser.add_argument("--data", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        return child(args)
    methods = study_methods(args.study, args.methods)
    args.workdir.mkdir(parents=True, exist_ok=True)
    if not args.report_only:
        import rankstudy

        print(f"rankstudy from {Path(rankstudy.__file__).parent}; {len(methods)} methods; workdir {args.workdir}",
              flush=True)
        run(args, methods)
    print(report(args, methods))
    if args.write_footprints:
        import subprocess

        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True)
        measured = f"{time.strftime('%Y-%m-%d')}, code {commit.stdout.strip() or 'unknown'}"
        write_footprints(args.write_footprints, footprints(load_fits(args.workdir / "fits.jsonl"), methods,
                                                           args.shape, measured))
        print(f"footprints of {args.shape} written to {args.write_footprints}")


if __name__ == "__main__":
    main()
