"""Train one method on one fold: fit every candidate of its grid on the training split,
keep the best on the validation split's selection metric, and save the chosen model with
its training curve, the candidates' table and when and from which commit it was trained.
Scoring and the report metrics are the evaluate job's, so adding a metric retrains nothing."""

import csv
import time
import uuid

from rankstudy.data.kinds import load_split
from rankstudy.features.featuresets import FeatureSet
from rankstudy.pipeline.jobs import job_logging
from rankstudy.pipeline.records import FitRecord, FoldMeta
from rankstudy.pipeline.stepjob import exit_done, from_argv
from rankstudy.rankers.registry import ranker_class
from rankstudy.rankers.selection import select_and_fit
from rankstudy.rankers.spec import training_params
from rankstudy.tracking.provenance import git_commit
from rankstudy.util import atomic

job = from_argv()  # run by `shell:` (rankstudy.pipeline.stepjob)
with job_logging(job, "train"):
    started_ms = int(time.time() * 1000)
    w, spec, selection = job.wildcards, job.params.spec, job.params.selection
    out = job.output
    train, vali = (load_split(job.input[s]) for s in ("train", "vali"))
    meta = FoldMeta.read(job.input.meta)
    featureset = FeatureSet.from_dict(job.params.featureset)
    print(f"{w.method} on {w.dataset} [{w.featureset}] fold {w.fold} (study {w.study}): "
          f"{train.n_queries} training queries, {meta.n_features} features")
    params = training_params(spec, job.params.seed, selection["rel_threshold"])
    if featureset.quadratic:
        with open(job.input.pairs) as f:  # pairs.tsv numbers features from 1
            pairs = [[int(row["i"]) - 1, int(row["j"]) - 1] for row in csv.DictReader(f, delimiter="\t")]
        params.update(ranker_class(spec["kind"]).featureset_params(featureset, pairs))
        print(f"{len(pairs)} second-order pairs left to the ranker")
    # the selection metric is computed as the evaluate job reports it (same ERR max_label)
    metric = selection["selection_metric"]
    metric_options = {"rel_threshold": selection["rel_threshold"], "no_relevant": selection["no_relevant"],
                      "max_label": meta.max_label}
    ranker, chosen, table = select_and_fit(spec["kind"], params, spec.get("grid"), train, vali,
                                           metric=metric, metric_options=metric_options)
    trace = ranker.objective_trace_
    if trace:
        print(f"training objective: {trace['start']} at the start, {trace['final']} at the end")
    picked = ", ".join(f"{k}={chosen[k]}" for k in (spec.get("grid") or {}))
    score = next(row[f"vali.{metric}"] for row in table if row["selected"])
    print(f"summary: {picked + ', ' if picked else ''}vali {metric} {score:.4f}"
          + (f", objective {trace['start']:.4g} -> {trace['final']:.4g}" if trace and trace["start"] is not None else ""))
    ranker.save(out.model)
    atomic.write_json(out.history, ranker.history_)
    atomic.write_rows(table, out.selection)
    FitRecord(kind=spec["kind"], params=chosen, grid=spec.get("grid") or {}, seed=job.params.seed,
              selection=selection, uid=uuid.uuid4().hex, git_commit=git_commit(), started_ms=started_ms,
              finished_ms=int(time.time() * 1000), objective=trace,
              selection_score=float(score)).write(out.fit)
exit_done()
