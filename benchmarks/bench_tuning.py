"""Tuning's own cost per trial against the fit it tunes: a linear RankNet on MQ2008 fold 1 tuned
for N trials (random search or TPE, the study in a journal file, as the train job runs it),
against the same N fits called directly in the same process. The difference per trial is what
the sampler, the storage, the heartbeat and the bookkeeping cost; the target is at most 10% of
one linear fit. The trials' MLflow runs are logged later by the log_runs job, timed here too:
N nested runs under one parent in a new SQLite store, per run.

    python benchmarks/bench_tuning.py [--data-root ../shared/data] [--trials 30] [--sampler tpe]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from rankstudy.data.letor import read_letor
from rankstudy.selection.search import fit_candidate
from rankstudy.selection.settings import TuneSettings
from rankstudy.selection.tuning import study_name, tune_and_fit, tuning_space

PARAMS = {"loss": "ranknet", "max_iter": 200, "seed": 0}
SPACE = {"l2": {"log_uniform": [1e-6, 10.0]}}
METRIC, OPTIONS = "ndcg@10", {"rel_threshold": 1, "no_relevant": "zero", "max_label": 2.0}


def mlflow_seconds_per_nested_run(n: int, folder: Path) -> float:
    import mlflow

    mlflow.set_tracking_uri(f"sqlite:///{folder / 'mlflow.db'}")
    mlflow.set_experiment("bench_tuning")
    with mlflow.start_run(run_name="fold"):
        start = time.perf_counter()
        for k in range(n):
            with mlflow.start_run(run_name=f"trial {k + 1}", nested=True):
                mlflow.log_params({"l2": 10 ** -k})
                mlflow.log_metrics({"vali.ndcg10": 0.5, "seconds": 1.0, "cpu_seconds": 1.0})
                mlflow.set_tag("state", "complete")
        return (time.perf_counter() - start) / n


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-root", type=Path, default=Path("../shared/data"))
    parser.add_argument("--trials", type=int, default=30)
    parser.add_argument("--sampler", choices=["tpe", "random"], default="tpe")
    args = parser.parse_args()
    fold = args.data_root / "MQ2008" / "Fold1"
    train, vali = read_letor(fold / "train.txt.gz"), read_letor(fold / "vali.txt.gz")
    settings = TuneSettings(sampler=args.sampler, trials=args.trials, space=SPACE)
    space = tuning_space("linear", PARAMS, SPACE)
    fit_candidate("linear", {**PARAMS, "l2": 1e-3}, train, vali, METRIC, OPTIONS)  # imports, first calls: untimed
    with tempfile.TemporaryDirectory() as tmp:
        name = study_name("bench/MQ2008/first/ranknet/fold1", "linear", PARAMS, space, settings, METRIC, OPTIONS)
        start = time.perf_counter()
        outcome = tune_and_fit("linear", PARAMS, space, train, vali, metric=METRIC, metric_options=OPTIONS,
                               settings=settings, storage=str(Path(tmp) / "fold1.journal"), name=name,
                               progress=lambda _: None)
        tuned = time.perf_counter() - start
        # the same fits, called directly: the floor the tuning adds its bookkeeping to
        l2s = [row["param.l2"] for row in outcome.rows]
        start = time.perf_counter()
        fits = [fit_candidate("linear", {**PARAMS, "l2": l2}, train, vali, METRIC, OPTIONS).seconds for l2 in l2s]
        direct = time.perf_counter() - start
        logging = mlflow_seconds_per_nested_run(args.trials, Path(tmp))
    per_fit = statistics.median(fits)
    # what the tuning spent outside its trials' own fits (their seconds, measured inside it): the
    # machine's load on the fits cancels out
    inside = sum(row["fit_seconds"] for row in outcome.rows)
    overhead = max(tuned - inside, 0.0) / args.trials
    print(f"MQ2008 fold 1, linear RankNet, {args.trials} {args.sampler} trials over l2 (log-uniform 1e-6..10)")
    print(f"tuned: {tuned:.2f} s, of which its trials' fits {inside:.2f} s; the same {args.trials} fits called "
          f"directly: {direct:.2f} s (median fit {per_fit:.3f} s)")
    print(f"tuning's own cost (sampler, journal storage, heartbeat, bookkeeping): {overhead * 1000:.1f} ms a trial "
          f"= {overhead / per_fit:.1%} of a linear fit")
    print(f"MLflow, one nested run per trial (new SQLite store): {logging * 1000:.1f} ms a trial "
          f"= {logging / per_fit:.1%} of a linear fit")
    print(f"together: {(overhead + logging) / per_fit:.1%} of a linear fit (target: at most 10%)")


if __name__ == "__main__":
    main()
