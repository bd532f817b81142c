"""The pipeline at the scale of the real benchmarks: the default methods on synthetic data of
MSLR-WEB10K, MSLR-WEB30K or Istella size, for one fold or five, through the real `snakemake` CLI.

    python benchmarks/bench_scale.py [--size mslr10k|mslr30k|istella|tiny] [--folds 1] [--cores 2]
                                     [--workdir DIR] [--methods ranknet lambdamart ...] [--rho 0.10]
                                     [--drop-prepared] [--dtype float64|float32]

It copies the workflow into ``--workdir`` (default ``scale-runs/<size>-<folds>f`` under the
system's temp folder), writes a config (the default config.yaml with the sized synthetic data
set, the folds, one rho feature set and the chosen methods), runs Snakemake there and then reads
the ``benchmark:`` file every job wrote (``results/benchmarks/<rule>/...tsv``: wall and CPU
seconds, peak RSS). It prints and writes (``scale.md``, ``scale.csv``, ``scale.jobs.csv`` in the
workdir):

* per rule: jobs, wall seconds (sum and longest job), CPU seconds, CPU/wall of the longest job
  (about 2 when a job used both cores), the largest peak RSS, and the largest ratio of a job's peak
  RSS to the size of the arrays it reads (its input .npz files, uncompressed, so their size is the
  arrays'; ``parse_fold`` reads text or a generator, so its own output arrays are used; only for
  jobs reading 100 MB or more, below which the interpreter and libraries are most of the memory);
* the whole run: wall time, and the machine's peak memory in use during the run above what was in
  use before it (sampled every second from /proc/meminfo, so neighbours' memory counts too);
* the issue's targets: MSLR-WEB30K size, 5 folds, under 3 hours and 24 GiB; no stage above 3x its
  input arrays.

A rerun in the same workdir reuses what Snakemake finds up to date (so a stopped run continues);
``--fresh`` deletes the workdir first. Each call is recorded in ``scale.run.json`` when it ends
(also when Snakemake fails); the whole run's time is the sum over the calls, and is not given when
a job finished in a call that recorded nothing (one that was killed, which also leaves
Snakemake's lock behind). Progress: Snakemake's console lines pass through, and every long job
writes progress lines to its log under ``results/logs/``.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
import pandas as pd
import yaml

from rankstudy.data.registry import load_registry
from rankstudy.pipeline import layout

REPO = Path(__file__).resolve().parents[1]
SNAKEMAKE = str(Path(sys.executable).with_name("snakemake"))

# queries, features, and query lengths (log-normal median, clipped) giving about the benchmark's
# documents per query: MSLR-WEB10K 1.20M docs / 10k queries, WEB30K 3.77M / 31.5k, Istella 10.5M / 33k
SIZES = {
    "default": {"n_queries": 250, "n_features": 24},  # config.yaml's data set
    "tiny": {"n_queries": 100, "n_features": 24},  # a smoke test of the benchmark itself
    "mslr10k": {"n_queries": 10000, "n_features": 136, "median_len": 90, "min_len": 1, "max_len": 908},
    "mslr30k": {"n_queries": 31531, "n_features": 136, "median_len": 90, "min_len": 1, "max_len": 1251},
    "istella": {"n_queries": 33018, "n_features": 220, "median_len": 240, "min_len": 1, "max_len": 1000},
}
TARGET_SECONDS, TARGET_GIB, TARGET_INPUT_RATIO = 3 * 3600, 24, 3.0
MIN_INPUT_MB = 100


def job_inputs(rule: str, keys: dict, protocol: layout.Protocol) -> list[str]:
    """The .npz files a job reads (the arrays its memory is measured against), from its wildcards
    (``layout.job_wildcards``) and the run's protocol."""
    k = {**protocol.keys(), **keys}
    splits = lambda template, names: [layout.fill(template, split=s, **k) for s in names]  # noqa: E731
    if rule == "parse_fold":  # reads text or the generator: its own output arrays
        return splits(layout.PARSED, ("train", "vali", "test"))
    if rule == "clean_fold":
        return splits(layout.PARSED, ("train", "vali", "test"))
    if rule == "pair_correlations":
        return splits(layout.CLEANED, ("train",))
    if rule == "featurize":
        return splits(layout.CLEANED, ("train", "vali", "test"))
    if rule == "train":
        return splits(layout.FEATURES, ("train", "vali"))
    if rule == "evaluate":
        return splits(layout.FEATURES, ("vali", "test"))
    return []


def run_protocol(workdir: Path) -> layout.Protocol:
    config = yaml.safe_load((workdir / "scale.yaml").read_text())
    entry = load_registry(workdir / "config" / "datasets.yaml")["synthetic"]
    return layout.protocol("synthetic", entry, config)


def collect(workdir: Path, seen_mb: dict[str, float]) -> pd.DataFrame:
    """One row per job from the benchmark files Snakemake wrote. Input arrays deleted since
    (temp prepared splits) count at the size the run saw them (``seen_mb``)."""
    rows = []
    protocol = run_protocol(workdir)
    for tsv in sorted((workdir / "results" / "benchmarks").rglob("*.tsv")):
        rel = tsv.relative_to(workdir / "results" / "benchmarks").with_suffix("")
        rule, job = rel.parts[0], "/".join(rel.parts[1:])
        keys = layout.job_wildcards(rule, job)
        bench = pd.read_csv(tsv, sep="\t").iloc[-1]  # the last repeat, if --benchmark-repeats
        inputs = [workdir / p for p in job_inputs(rule, keys, protocol)] if keys else []
        sizes = [p.stat().st_size / 2**20 if p.exists() else seen_mb.get(str(p.relative_to(workdir)))
                 for p in inputs]
        input_mb = sum(sizes) if inputs and None not in sizes else float("nan")
        rows.append({"rule": rule, "job": job, "finished": tsv.stat().st_mtime,
                     "inputs_unknown": None in sizes, "wall_s": float(bench["s"]),
                     "cpu_s": float(bench["cpu_time"]), "max_rss_mb": float(bench["max_rss"]),
                     "input_mb": input_mb})
    jobs = pd.DataFrame(rows)
    # below ~100 MB of arrays the interpreter and its libraries (~200-300 MB) are the memory: no ratio
    jobs["rss_over_input"] = (jobs["max_rss_mb"] / jobs["input_mb"]).where(jobs["input_mb"] >= MIN_INPUT_MB)
    return jobs


def per_rule(jobs: pd.DataFrame) -> pd.DataFrame:
    order = ["parse_fold", "clean_fold", "pair_correlations", "featurize", "train", "evaluate", "aggregate", "tables"]
    rows = []
    for rule, g in jobs.groupby("rule"):
        longest = g.loc[g["wall_s"].idxmax()]
        rows.append({"rule": rule, "jobs": len(g), "wall_s_sum": g["wall_s"].sum(),
                     "longest_job": longest["job"], "longest_wall_s": longest["wall_s"],
                     "longest_cpu_per_wall": longest["cpu_s"] / longest["wall_s"] if longest["wall_s"] else float("nan"),
                     "cpu_s_sum": g["cpu_s"].sum(), "max_rss_mb": g["max_rss_mb"].max(),
                     "input_mb_of_max_rss_job": g.loc[g["max_rss_mb"].idxmax(), "input_mb"],
                     "max_rss_over_input": g["rss_over_input"].max()})
    table = pd.DataFrame(rows)
    table["order"] = [order.index(r) if r in order else len(order) for r in table["rule"]]
    return table.sort_values(["order", "rule"]).drop(columns="order")


class MemorySampler:
    """The machine's memory in use (MemTotal - MemAvailable), sampled ten times a second; also the
    sizes of the prepared splits (results/data), which are temp files with --drop-prepared and
    so gone when the jobs are tabulated. A small split lives less than a second between its
    parse and its clean job, so a slower sampler misses it."""

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.npz_mb: dict[str, float] = {}
        self.baseline = self.used()
        self.peak = self.baseline
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    @staticmethod
    def used() -> int:
        info = dict(line.split(":", 1) for line in Path("/proc/meminfo").read_text().splitlines())
        kib = lambda key: int(info[key].split()[0])  # noqa: E731
        return (kib("MemTotal") - kib("MemAvailable")) * 1024

    def _run(self) -> None:
        while not self._stop.wait(0.1):
            self.peak = max(self.peak, self.used())
            for f in (self.workdir / "results" / "data").rglob("*.npz"):
                try:
                    size = f.stat().st_size / 2**20
                except FileNotFoundError:  # deleted between the listing and the stat
                    continue
                key = str(f.relative_to(self.workdir))
                self.npz_mb[key] = max(self.npz_mb.get(key, 0.0), size)

    def __enter__(self) -> "MemorySampler":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()


def disk_estimate(args: argparse.Namespace) -> float:
    """Bytes of the .npz caches at their peak: every fold holds every document once per feature
    set (first and rho, in features.dtype; rho's products make it larger, not counted) and once
    as prepared (float64), or, with --drop-prepared, about one fold's prepared splits at a time."""
    size = SIZES[args.size]
    docs = size["n_queries"] * size.get("median_len", 34) * 1.35  # log-normal mean ~ 1.35 x median
    itemsize = 4 if args.dtype == "float32" else 8
    prepared_folds = 1 if args.drop_prepared else args.folds
    return docs * size["n_features"] * (args.folds * 2 * itemsize + prepared_folds * 8)


def make_workdir(workdir: Path, args: argparse.Namespace) -> None:
    for name in ("Snakefile", "workflow", "config", "environment.yml"):
        src, dst = REPO / name, workdir / name
        if dst.exists():
            shutil.rmtree(dst) if dst.is_dir() else dst.unlink()
        (shutil.copytree if src.is_dir() else shutil.copy)(src, dst)
    config = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    methods = args.methods or list(config["methods"])
    unknown = sorted(set(methods) - set(config["methods"]))
    if unknown:
        raise SystemExit(f"unknown methods {unknown}; config/config.yaml has {sorted(config['methods'])}")
    config.update({
        "study": f"scale-{args.size}", "datasets": ["synthetic"], "folds": list(range(1, args.folds + 1)),
        "synthetic": SIZES[args.size], "run_methods": methods,
        "features": {**config["features"], "first_order": True, "rho": [args.rho], "dtype": args.dtype,
                     "keep_prepared": not args.drop_prepared},
    })
    if config["report"]["baseline"] not in methods:
        config["report"]["baseline"] = methods[0]
    (workdir / "scale.yaml").write_text(yaml.safe_dump(config, sort_keys=False))


def markdown(table: pd.DataFrame) -> str:
    shown = table.assign(**{c: table[c].map(lambda v: f"{v:.1f}") for c in
                            ("wall_s_sum", "longest_wall_s", "cpu_s_sum", "max_rss_mb", "input_mb_of_max_rss_job")},
                         longest_cpu_per_wall=table["longest_cpu_per_wall"].map(lambda v: f"{v:.2f}"),
                         max_rss_over_input=table["max_rss_over_input"].map(lambda v: f"{v:.2f}"))
    return shown.to_markdown(index=False)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", choices=sorted(SIZES), default="mslr10k")
    parser.add_argument("--folds", type=int, default=1, choices=range(1, 6), metavar="1..5")
    parser.add_argument("--cores", type=int, default=2)
    parser.add_argument("--workdir", type=Path)
    parser.add_argument("--methods", nargs="+", help="methods of config/config.yaml (default: all)")
    parser.add_argument("--rho", type=float, default=0.10, help="the one rho feature set's threshold")
    parser.add_argument("--dtype", choices=["float64", "float32"], default="float64", help="features.dtype")
    parser.add_argument("--drop-prepared", action="store_true",
                        help="features.keep_prepared: false (parsed splits deleted once featurised: a third less disk)")
    parser.add_argument("--compare", type=Path, metavar="WORKDIR",
                        help="another run's workdir: print the largest differences of the reported metrics")
    parser.add_argument("--fresh", action="store_true", help="delete the workdir first")
    parser.add_argument("--report-only", action="store_true",
                        help="do not run: tabulate the workdir's last run (its scale.run.json) again")
    args = parser.parse_args()
    workdir = args.workdir or Path(tempfile.gettempdir()) / "scale-runs" / f"{args.size}-{args.folds}f-{args.dtype}"
    if args.fresh and workdir.exists():
        shutil.rmtree(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    saved = workdir / "scale.run.json"
    calls = json.loads(saved.read_text()).get("calls", []) if saved.exists() else []
    if not args.report_only:
        make_workdir(workdir, args)
        print(f"scale benchmark {args.size} ({SIZES[args.size]}), {args.folds} fold(s), "
              f"--cores {args.cores}, in {workdir}", flush=True)
        # a continued run needs only the caches it has not written yet
        cached = sum(f.stat().st_size for f in (workdir / "results").rglob("*.npz"))
        need, free = max(disk_estimate(args) - cached, 0), shutil.disk_usage(workdir).free
        print(f"disk: about {need / 2**30:.0f} GiB of split caches still to write, {free / 2**30:.0f} GiB free",
              flush=True)
        if need > free:
            raise SystemExit(f"not enough disk in {workdir}: about {need / 2**30:.0f} GiB needed "
                             f"(each fold caches every document once per feature set and once parsed; "
                             f"--drop-prepared saves the parsed copies)")
        call, failure = run_snakemake(workdir, args.cores)
        calls.append(call)
        saved.write_text(json.dumps({"calls": calls}))
        if failure:
            raise SystemExit(failure)
    jobs = collect(workdir, {k: v for call in calls for k, v in call["npz_mb"].items()})
    table = per_rule(jobs)
    jobs.to_csv(workdir / "scale.jobs.csv", index=False)
    table.to_csv(workdir / "scale.csv", index=False)
    disk_gib = sum(f.stat().st_size for f in (workdir / "results").rglob("*") if f.is_file()) / 2**30
    run = whole_run_figures(calls, jobs)
    docs = sum(int(v) for k, v in _meta_docs(workdir).items())
    lines = [
        f"# Scale benchmark: {args.size}, {args.folds} fold(s), --cores {args.cores}",
        "",
        f"Synthetic data: {SIZES[args.size]}; fold 1 holds {docs:,} documents (train + vali + test).",
        f"Methods: {', '.join(args.methods or yaml.safe_load((workdir / 'scale.yaml').read_text())['run_methods'])}; "
        f"feature sets: first, rho{args.rho:.2f}.",
        "",
        markdown(table),
        "",
        whole_run(run, disk_gib),
        input_ratio(table, jobs),
    ]
    if args.size == "mslr30k" and args.folds == 5 and run["wall_s"] is not None:
        met = run["wall_s"] <= TARGET_SECONDS and run["peak_gib"] <= TARGET_GIB
        lines.append(f"Target (MSLR-WEB30K size, 5 folds: < 3 h and < 24 GiB): {'met' if met else 'not met'}.")
    elif args.size == "mslr30k" and args.folds == 5:
        lines.append("Target (MSLR-WEB30K size, 5 folds: < 3 h and < 24 GiB): not judged (whole run not measured).")
    if args.compare:
        lines += ["", compare_metrics(workdir, args.compare)]
    report = "\n".join(lines)
    (workdir / "scale.md").write_text(report + "\n")
    print(report)


def input_ratio(table: pd.DataFrame, jobs: pd.DataFrame) -> str:
    unknown = sorted(set(jobs.loc[jobs["inputs_unknown"], "rule"]))
    if unknown:  # temp inputs deleted in a call that did not record their sizes
        return (f"Stage memory / input arrays: not measured for {', '.join(unknown)} (their input arrays were "
                f"deleted in a call that recorded nothing). {_input_ratio(table[~table['rule'].isin(unknown)])}")
    return _input_ratio(table)


def _input_ratio(table: pd.DataFrame) -> str:
    worst = table["max_rss_over_input"].max()
    if pd.isna(worst):
        return f"Stage memory / input arrays: no job read {MIN_INPUT_MB} MB of arrays or more (no ratio)."
    return (f"Largest stage memory / input arrays (jobs reading >= {MIN_INPUT_MB} MB): {worst:.2f} "
            f"(target <= {TARGET_INPUT_RATIO:g}: {'met' if worst <= TARGET_INPUT_RATIO else 'not met'}).")


def whole_run_figures(calls: list[dict], jobs: pd.DataFrame) -> dict:
    """The run's wall time (summed over the calls of a continued run) and memory peak, or, when
    some job finished outside every recorded call (a call that was killed records nothing), the
    count of those jobs instead: then the run was not measured as a whole."""
    finished = jobs["finished"].to_numpy()
    recorded = np.zeros(len(jobs), dtype=bool)
    for call in calls:  # a job's benchmark file is written when it finishes
        recorded |= (finished >= call["start"]) & (finished <= call["end"] + 1)
    peak = max(calls, key=lambda call: call["peak_gib"], default={"peak_gib": None, "baseline_gib": None})
    calls_wall_s = sum(call["wall_s"] for call in calls)
    return {"n_calls": len(calls), "n_jobs": len(jobs), "unrecorded": int((~recorded).sum()),
            "calls_wall_s": calls_wall_s, "wall_s": calls_wall_s if calls and recorded.all() else None,
            "peak_gib": peak["peak_gib"], "baseline_gib": peak["baseline_gib"]}


def whole_run(run: dict, disk_gib: float) -> str:
    if run["wall_s"] is None:
        return (f"Whole run: not measured: {run['unrecorded']} of its {run['n_jobs']} jobs finished in a call that "
                f"recorded nothing (a stopped run); the {run['n_calls']} recorded call(s) took "
                f"{run['calls_wall_s']:.0f} s; results/ takes {disk_gib:.1f} GiB of disk.")
    calls = "in one call" if run["n_calls"] == 1 else \
        f"summed over {run['n_calls']} calls (a continued run)"
    return (f"Whole run: {run['wall_s']:.0f} s wall ({run['wall_s'] / 3600:.2f} h) {calls}, {run['n_jobs']} jobs; "
            f"machine memory in use peaked {run['peak_gib']:.2f} GiB above the {run['baseline_gib']:.2f} GiB in use "
            f"before; results/ takes {disk_gib:.1f} GiB of disk.")


def run_snakemake(workdir: Path, cores: int) -> tuple[dict, str | None]:
    """Run the workflow, passing on the console lines that say which jobs start and finish;
    the call's wall time and the machine's memory peak above what was in use before it, and
    the failure message if Snakemake failed."""
    cmd = [SNAKEMAKE, "--cores", str(cores), "--configfile", "scale.yaml", "--replace-workflow-config",
           "--rerun-incomplete"]
    start, started_at = time.perf_counter(), time.time()
    with MemorySampler(workdir) as memory, open(workdir / "snakemake.log", "w") as log:
        proc = subprocess.Popen(cmd, cwd=workdir, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        for line in proc.stdout:
            log.write(line)
            if re.match(r"(rule |localrule |\d+ of \d+ steps|Error|WorkflowError|Finished)", line.strip()) \
                    or "wildcards:" in line:
                print(f"  {line.rstrip()}", flush=True)
        returncode = proc.wait()
    call = {"start": started_at, "end": time.time(), "wall_s": time.perf_counter() - start,
            "peak_gib": (memory.peak - memory.baseline) / 2**30, "baseline_gib": memory.baseline / 2**30,
            "npz_mb": memory.npz_mb}
    if returncode == 0:
        return call, None
    locked = "cannot be locked" in (workdir / "snakemake.log").read_text()
    hint = (f"; a killed run leaves Snakemake's lock behind: if no other snakemake runs there, "
            f"`snakemake --unlock --cores 1 --configfile scale.yaml` in {workdir} removes it") if locked else ""
    return call, f"snakemake failed (exit {returncode}); see {workdir / 'snakemake.log'}{hint}"


def compare_metrics(workdir: Path, other: Path) -> str:
    """The largest difference between two runs' test metrics, per query and of the fold means,
    over every (feature set, method) both have."""
    per_query, means = [], []
    for mine in sorted((workdir / "results" / "runs").glob("*/*/*/*/metrics.per_query.test.csv")):
        theirs = other / mine.relative_to(workdir)
        if not theirs.exists():
            continue
        a, b = pd.read_csv(mine), pd.read_csv(theirs)
        metrics = [c for c in a.columns if c in b.columns and c not in ("qid", "fold")]
        diff = (a[metrics] - b[metrics]).abs()
        system = "/".join(mine.parts[-4:-1])
        per_query.append(diff.max().rename(system))
        mean_diff = (a.groupby("fold")[metrics].mean() - b.groupby("fold")[metrics].mean()).abs().max()
        means.append(mean_diff.rename(system))
    if not per_query:
        return f"nothing to compare in {other}"
    q, m = pd.DataFrame(per_query), pd.DataFrame(means)
    return "\n".join([
        f"Against {other}: largest |difference| of a test metric",
        f"* per query: {q.max().max():.3g} ({q.max(axis=1).idxmax()}, {q.max().idxmax()});",
        f"* of a fold mean: {m.max().max():.3g} ({m.max(axis=1).idxmax()}, {m.max().idxmax()});",
        f"* systems with every fold mean within 1e-6: {int((m.max(axis=1) <= 1e-6).sum())} of {len(m)}.",
        "", "Largest fold-mean difference per system:", "",
        m.max(axis=1).rename("max |diff|").to_frame().to_markdown(floatfmt=".3g"),
    ])


def _meta_docs(workdir: Path) -> dict:
    meta = yaml.safe_load((workdir / layout.fill(layout.FOLD_META, fold=1, **run_protocol(workdir).keys())).read_text())
    return {s: meta[f"{s}.n_docs"] for s in ("train", "vali", "test")}


if __name__ == "__main__":
    main()
