"""What a train job and a tuning worker read alike: the fold's splits, the method's parameters
as its ranker is built with them (the run's seed, the feature set's pairs), the selection
metric with the evaluate job's options, and for a tuned method its settings, search space,
storage and study name."""

from __future__ import annotations

import csv
import math
import os
from dataclasses import dataclass

from rankstudy.data.kinds import load_split
from rankstudy.features.featuresets import FeatureSet
from rankstudy.pipeline.records import FitRecord, FoldMeta
from rankstudy.rankers.registry import ranker_class
from rankstudy.selection.spec import training_params


@dataclass
class TrainingJob:
    train: object
    vali: object
    meta: FoldMeta
    params: dict
    metric: str
    metric_options: dict
    pairs: int  # second-order pairs left to the ranker (0 for other feature sets)


def training_job(job) -> TrainingJob:
    spec, selection = job.params.spec, job.params.selection
    train, vali = (load_split(job.input[s]) for s in ("train", "vali"))
    meta = FoldMeta.read(job.input.meta)
    featureset = FeatureSet.from_dict(job.params.featureset)
    params = training_params(spec, job.params.seed, selection["rel_threshold"])
    pairs = []
    if featureset.quadratic:
        with open(job.input.pairs) as f:  # pairs.tsv numbers features from 1
            pairs = [[int(row["i"]) - 1, int(row["j"]) - 1] for row in csv.DictReader(f, delimiter="\t")]
        params.update(ranker_class(spec["kind"]).featureset_params(featureset, pairs))
    # the selection metric is computed as the evaluate job reports it (same ERR max_label)
    options = {"rel_threshold": selection["rel_threshold"], "no_relevant": selection["no_relevant"],
               "max_label": meta.max_label}
    return TrainingJob(train, vali, meta, params, selection["selection_metric"], options, len(pairs))


@dataclass
class Tuning:
    settings: object  # rankstudy.selection.tuning.TuneSettings
    space: dict
    storage: str
    name: str  # the Optuna study's
    base: list[dict]  # the untuned method's candidates, the study's first trials
    # the default twin's validation score on the whole fold (None: no twin, or it diverged): the
    # floor of a study on a train fraction (rankstudy.selection.tuning.at_least_untuned)
    base_value: float | None = None


def tuning_of(job, fit: TrainingJob) -> Tuning:
    """A tuned method's settings, space, storage, study name and first trials."""
    from rankstudy.selection.settings import TuneSettings
    from rankstudy.selection.tuning import base_candidates, study_name, tuning_space

    spec, w = job.params.spec, job.wildcards
    settings = TuneSettings.from_config(spec["tune"])
    space = tuning_space(spec["kind"], fit.params, settings.space)
    selected = base_value = None
    if settings.base_method:  # the default twin's fit on this fold: what it selected, and its score
        twin = FitRecord.read(job.input["base"])
        selected = twin.params
        if not twin.diverged and twin.selection_score is not None and math.isfinite(twin.selection_score):
            base_value = twin.selection_score
    base = base_candidates(spec["kind"], fit.params, space, settings.grid, selected)
    prefix = f"{w.study}/{w.dataset}/{w.featureset}/{w.method}/fold{w.fold}"
    name = study_name(prefix, spec["kind"], fit.params, space, settings, fit.metric, fit.metric_options, base)
    # the environment's database wins: it keeps a password off the job's command line
    storage = os.environ.get("RANKSTUDY_TUNE_STORAGE", "").strip() or job.params.tune_storage
    return Tuning(settings, space, storage, name, base, base_value)
