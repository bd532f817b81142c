"""One tuning worker of a method on a fold (tune.workers > 1): run trials of the method's Optuna
study, shared with the fold's other workers through its storage, until the budget is spent;
record which trials this worker ran. The train job then fits the best trial's model."""

import os
import time

from rankstudy.pipeline.jobs import job_logging
from rankstudy.pipeline.stepjob import exit_done, from_argv
from rankstudy.pipeline.training import training_job, tuning_of
from rankstudy.util import atomic

job = from_argv()  # run by `shell:` (rankstudy.pipeline.stepjob)
with job_logging(job, "tune_trials"):
    from rankstudy.rankers.tuning import check_settings, run_trials

    w, spec = job.wildcards, job.params.spec
    start = time.perf_counter()
    fit = training_job(job)
    tuned = tuning_of(job, fit)
    check_settings(tuned.settings)
    worker = int(w.worker)
    print(f"worker {worker}: tuning {w.method} on {w.dataset} fold {w.fold}, study {tuned.name}")
    study, kept = run_trials(spec["kind"], fit.params, tuned.space, fit.train, fit.vali, metric=fit.metric,
                             metric_options=fit.metric_options, settings=tuned.settings, storage=tuned.storage,
                             name=tuned.name, worker=worker, seed=job.params.seed, base=tuned.base)
    mine = [t.number + 1 for t in study.get_trials(deepcopy=False)
            if t.user_attrs.get("worker") == worker and t.user_attrs.get("pid") == os.getpid()]
    print(f"summary: worker {worker} ran trials {mine} in {time.perf_counter() - start:.1f} s")
    atomic.write_json(job.output.trials, {"worker": worker, "study": tuned.name, "trials": mine,
                                          "seconds": round(time.perf_counter() - start, 3)})
exit_done()
