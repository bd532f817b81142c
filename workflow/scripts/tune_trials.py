"""One tuning worker of a method on a fold (tune.workers > 1): run trials of the method's Optuna
study, shared with the fold's other workers through its storage, until the budget is spent;
record which trials this worker ran. The train job then fits the best trial's model."""

import sys
import time

from rankstudy.pipeline.jobs import job_logging
from rankstudy.pipeline.stepjob import exit_done, from_argv
from rankstudy.pipeline.training import training_job, tuning_of
from rankstudy.util import atomic

job = from_argv()  # run by `shell:` (rankstudy.pipeline.stepjob)
with job_logging(job, "tune_trials", keep_attempts=True):
    from rankstudy.selection.settings import check_settings
    from rankstudy.selection.tuning import run_trials

    w, spec = job.wildcards, job.params.spec
    start = time.perf_counter()
    fit = training_job(job)
    tuned = tuning_of(job, fit)
    check_settings(tuned.settings)
    worker = int(w.worker)
    print(f"worker {worker}: tuning {w.method} on {w.dataset} fold {w.fold}, study {tuned.name}")
    study, _, _ = run_trials(spec["kind"], fit.params, tuned.space, fit.train, fit.vali, metric=fit.metric,
                             metric_options=fit.metric_options, settings=tuned.settings, storage=tuned.storage,
                             name=tuned.name, worker=worker, seed=job.params.seed, base=tuned.base,
                             notice=lambda line: (print(line), print(f"rankstudy {line}", file=sys.__stderr__)))
    # every trial this worker ran, in this attempt and in earlier ones (a rerun after a kill)
    mine = [t for t in study.get_trials(deepcopy=False) if t.user_attrs.get("worker") == worker]
    attempts = sorted({(t.user_attrs.get("host"), t.user_attrs.get("pid")) for t in mine}, key=str)
    print(f"summary: worker {worker} ran trials {[t.number + 1 for t in mine]} in {len(attempts)} attempt(s), "
          f"this one in {time.perf_counter() - start:.1f} s")
    atomic.write_json(job.output.trials, {
        "worker": worker, "study": tuned.name, "trials": [t.number + 1 for t in mine],
        "ran": [{"trial": t.number + 1, "state": t.user_attrs.get("state", "running"),
                 "host": t.user_attrs.get("host"), "pid": t.user_attrs.get("pid")} for t in mine],
        "seconds": round(time.perf_counter() - start, 3)})
exit_done()
