"""Train one method on one fold: fit every candidate of its grid on the training split (or, for
a tuned method, run its tuning trials: rankstudy.selection.tuning), keep the best on the
validation split's selection metric, and save the chosen model with its training curve, the
candidates' table and when and from which commit and code (its digest) it was trained. Scoring and the report metrics
are the evaluate job's, so adding a metric retrains nothing."""

import sys
import time
import uuid

from rankstudy.pipeline.jobs import job_logging
from rankstudy.pipeline.records import FitRecord
from rankstudy.pipeline.stepjob import exit_done, from_argv
from rankstudy.pipeline.training import training_job, tuning_of
from rankstudy.rankers.base import SAVE_FORMAT, SAVE_VERSION
from rankstudy.selection.search import AllDiverged, select_and_fit
from rankstudy.tracking.provenance import code_digest, git_commit
from rankstudy.util import atomic
from rankstudy.util.params import value_at

job = from_argv()  # run by `shell:` (rankstudy.pipeline.stepjob)
with job_logging(job, "train", keep_attempts=bool(job.params.spec.get("tune"))):
    started_ms = int(time.time() * 1000)
    w, spec, selection = job.wildcards, job.params.spec, job.params.selection
    out = job.output
    fit = training_job(job)
    print(f"{w.method} on {w.dataset} [{w.featureset}] fold {w.fold} (study {w.study}): "
          f"{fit.train.n_queries} training queries, {fit.meta.n_features} features")
    if fit.pairs:
        print(f"{fit.pairs} second-order pairs left to the ranker")
    metric, tuning = fit.metric, None
    if spec.get("tune"):
        from rankstudy.selection.tuning import tune_and_fit

        tuned = tuning_of(job, fit)
        settings = tuned.settings
        print(f"tuning {', '.join(tuned.space)} ({settings.sampler}, {settings.trials} trials"
              + (f", at most {settings.cpu_seconds:g} CPU-s" if settings.cpu_seconds else "")
              + f"): study {tuned.name}, opening with the untuned "
              + (f"{settings.base_method}'s selection" if settings.base_method else "method's candidates")
              + f" {tuned.base}")
        shown = list(tuned.space)
    else:
        shown = list(spec.get("grid") or {})
    diverged = None
    try:
        if spec.get("tune"):
            outcome = tune_and_fit(spec["kind"], fit.params, tuned.space, fit.train, fit.vali, metric=metric,
                                   metric_options=fit.metric_options, settings=settings, storage=tuned.storage,
                                   name=tuned.name, seed=job.params.seed, base=tuned.base, base_value=tuned.base_value,
                                   notice=lambda line: (print(line), print(f"rankstudy {line}", file=sys.__stderr__)))
            ranker, chosen, table, tuning = outcome.ranker, outcome.params, outcome.rows, outcome.summary
        else:
            ranker, chosen, table = select_and_fit(spec["kind"], fit.params, spec.get("grid"), fit.train, fit.vali,
                                                   metric=metric, metric_options=fit.metric_options)
    except AllDiverged as exc:
        if exc.ranker is None:
            raise
        # the fold is kept, reported as not learned, so the study's other folds and methods go on
        ranker, chosen, table, diverged = exc.ranker, exc.params, exc.rows, str(exc)
        print(f"WARNING: {diverged}")
        print(f"rankstudy train: {w.method} [{w.featureset}] {w.dataset} fold {w.fold}: {diverged}", file=sys.__stderr__)
    trace = None if diverged else ranker.objective_trace_
    if trace:
        print(f"training objective: {trace['start']} at the start, {trace['final']} at the end")
    picked = ", ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}"
                       for k, v in ((k, value_at(chosen, k)) for k in shown))
    score = next(row[f"vali.{metric}"] for row in table if row["selected"])
    if tuning and "full_fold_value" in tuning:  # the trials fit on a subsample: the model's own score
        score = tuning["full_fold_value"]
    spent = (f", {tuning['trials']} trials in {tuning['cpu_seconds']:.0f} CPU-s" if tuning else "")
    print(f"summary: {picked + ', ' if picked else ''}vali {metric} {score:.4f}{spent}"
          + (f", objective {trace['start']:.4g} -> {trace['final']:.4g}" if trace and trace["start"] is not None else ""))
    if diverged:  # no model to keep (a fit can stop half-way on NaN): a record of the diverged one
        atomic.write_json(out.model, {"format": SAVE_FORMAT, "version": SAVE_VERSION, "kind": spec["kind"],
                                      "params": chosen, "state": {}, "history": [], "objective": trace,
                                      "diverged": diverged})
    else:
        ranker.save(out.model)
    atomic.write_json(out.history, [] if diverged else ranker.history_)
    atomic.write_rows(table, out.selection)
    FitRecord(kind=spec["kind"], params=chosen, grid=spec.get("grid") or {}, seed=job.params.seed,
              selection=selection, uid=uuid.uuid4().hex, git_commit=git_commit(), started_ms=started_ms,
              finished_ms=int(time.time() * 1000), objective=trace,
              selection_score=float(score), tuning=tuning, diverged=diverged, code_digest=code_digest()).write(out.fit)
exit_done()
