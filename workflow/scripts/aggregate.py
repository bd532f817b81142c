"""Fold means (and standard deviations) of one (study, dataset, feature set, method), its test
metrics per query over all folds, and what its MLflow runs will hold (mlflow.json, which the
log_runs job logs): one child per training of a fold, kept (with its run id) while that training
stands, with its grid candidates nested under it, under a parent run holding the means and the
folds they cover. No MLflow here: its import
alone costs more than this job's work. Every file it reads is a declared input, in the order of
params.folds."""

import numpy as np
import pandas as pd

from rankstudy.pipeline.jobs import job_logging
from rankstudy.pipeline.records import FitRecord, FoldSummary, MethodSummary, MlflowPlan
from rankstudy.reporting.budget import fold_budget
from rankstudy.tracking.nested import nested_runs
from rankstudy.util import atomic
from rankstudy.util.params import value_at

# what each fold's MLflow run keeps as artifacts (names of the aggregate job's inputs)
ARTIFACTS = ("model", "scores_test", "trec", "qrels", "per_query_vali", "per_query_test", "selection", "resolved")
JOB_RULES = ("parse_fold", "clean_fold", "featurize", "train", "evaluate")
# what a fitted model settled itself, beside the grid's choice (LambdaMART's early stopping, a restart)
SETTLED = ("best_iteration", "chosen_restart")


def chosen_settings(fit: FitRecord, model_path: str, selection: pd.DataFrame) -> dict:
    """The params table's row of a fold: the grid's (or the tuned space's) chosen values, what the
    model settled itself, what a tuned method's tuning did (``tuning.*``, as fit.json's ``tuning``
    names it; ``tune.*`` is what the config set), the number of candidates that diverged where any
    did, and the chosen candidate's validation score."""
    state = atomic.read_json(model_path)["state"]
    tuned = fit.tuning or {}
    shown = [*fit.grid, *tuned.get("space", {})]
    spent = ({f"tuning.{k}": tuned[k] for k in ("trials", "cpu_seconds", "best_trial")} if tuned else {})
    if tuned.get("train_fraction", 1) < 1:  # the trials saw this share of the training queries
        spent["tune.train_fraction"] = tuned["train_fraction"]
    if tuned.get("pruner", "none") != "none":  # how many trials the pruner stopped (or why it could not)
        spent["tuning.pruned"] = tuned["pruned"] if tuned.get("reports") else "unpruned (no curve)"
    diverged = int((selection["state"] == "diverged").sum()) if "state" in selection else 0
    return {**{k: value_at(fit.params, k) for k in shown}, **{k: state[k] for k in SETTLED if k in state}, **spent,
            **({"diverged": diverged} if diverged else {}), "selection_score": fit.selection_score}


def fold_timing(fit: FitRecord, history: list[dict], selection: pd.DataFrame) -> dict:
    """Seconds of one fold's training: the whole train job (every grid candidate), the chosen
    candidate's fit, and of that the solver's time in the argmax and in the QP when it records
    them (the cutting-plane solver does)."""
    recorded = lambda key: sum(h[key] for h in history) if history and key in history[0] else None  # noqa: E731
    return {"train_job_seconds": fit.seconds, "tuning_cpu_seconds": (fit.tuning or {}).get("cpu_seconds"),
            "tuning_trials": (fit.tuning or {}).get("trials"),
            "fit_seconds": float(selection.loc[selection["selected"], "fit_seconds"].iloc[0]),
            "argmax_seconds": recorded("argmax_seconds"), "qp_seconds": recorded("qp_seconds")}


def job_benchmarks(inputs, i: int) -> dict:
    """Wall and CPU seconds and peak memory (MB) of the jobs behind fold ``i``'s run, from the
    files their `benchmark:` directives wrote (``train.wall_s``, ...): the run's usage, which
    MLflow shows as tags, not as metric charts before the learning curves (rankstudy.tracking.usage)."""
    found = {}
    for rule in JOB_RULES:
        bench = pd.read_csv(inputs[f"bench_{rule}"][i], sep="\t").iloc[-1]
        found.update({f"{rule}.wall_s": float(bench["s"]), f"{rule}.cpu_s": float(bench["cpu_time"]),
                      f"{rule}.max_rss_mb": float(bench["max_rss"])})
    return found


def learning_tags(summary: FoldSummary) -> dict:
    verdict = summary.learned
    tags = {"rankstudy.learned": str(verdict["learned"]).lower()}
    if not verdict["learned"]:
        tags["rankstudy.learned.problems"] = "; ".join(verdict["problems"])[:4000]
    return tags


with job_logging(snakemake, "aggregate"):
    w, inputs = snakemake.wildcards, snakemake.input
    identity = dict(study=w.study, dataset=w.dataset, featureset=w.featureset, method=w.method)
    folds, per_query, timing, fold_plans, learned, chosen_per_fold, ties, tuning = [], [], [], [], {}, {}, {}, {}
    for i, fold in enumerate(snakemake.params.folds):
        summary, fit = FoldSummary.read(inputs.summary[i]), FitRecord.read(inputs.fit[i])
        history = atomic.read_json(inputs.history[i])
        # every hyper-parameter candidate's validation score, as a step metric (step = candidate)
        selection = pd.read_csv(inputs.selection[i])
        scored = [c for c in selection.columns if c.startswith("vali.")]
        # candidate.vali.* (step = candidate); the chosen one's score is selection.vali.* at step 0
        candidates = [{"step": int(row["candidate"]), **{f"candidate.{c}": float(row[c]) for c in scored}}
                      for _, row in selection.iterrows()]
        chosen = {f"selection.vali.{fit.selection['selection_metric']}": fit.selection_score}
        usage = {"train_seconds": fit.seconds,
                 "fit_seconds": float(selection.loc[selection["selected"], "fit_seconds"].iloc[0]),
                 **job_benchmarks(inputs, i)}
        if fit.tuning:  # what the tuning budget bought, on the fold run beside its scores
            chosen.update({f"tuning.{k}": fit.tuning.get(k, 0)
                           for k in ("trials", "cpu_seconds", "best_trial", "diverged", "lost", "pruned")})
        fold_plans.append(dict(
            fold=fold,
            params={"method": fit.params, "kind": fit.kind, "featureset": w.featureset, "fold": fold,
                    "data_fingerprint": summary.fingerprint, "selection": fit.selection},
            metrics={**summary.metrics, **chosen, **{f"random.{k}": v for k, v in summary.random.items()}},
            usage=usage,
            history=history + candidates,
            artifacts=[inputs[name][i] for name in ARTIFACTS],
            tags={"git_commit": fit.git_commit, "code_digest": fit.code_digest or "unknown", "data_fingerprint": summary.fingerprint, **learning_tags(summary)},
            uid=fit.uid, start_time=fit.started_ms, end_time=fit.finished_ms,
            # one nested run per grid candidate, or per tuning trial
            nested=nested_runs(selection.to_dict("records"), level="trial" if fit.tuning else "candidate")))
        if not summary.learned["learned"]:
            print(f"fold {fold}: did not learn: {'; '.join(summary.learned['problems'])}")
        folds.append(summary)
        learned[fold] = summary.learned
        ties[fold] = summary.score_ties
        if fit.tuning:  # the budget it ran with and what it spent: the board says why a fold ran fewer trials
            tuning[fold] = fold_budget(fit.tuning)
        chosen_per_fold[fold] = chosen_settings(fit, inputs.model[i], selection)
        per_query.append(pd.read_csv(inputs.per_query_test[i]).assign(fold=fold))
        train_bench = pd.read_csv(inputs["bench_train"][i], sep="\t").iloc[-1]  # the job's CPU beside its wall time
        timing.append({**fold_timing(fit, history, selection), "train_job_cpu_seconds": float(train_bench["cpu_time"])})
    # a metric some folds lack (an extra metric dropped, then a new fold) is left out, not averaged over a few
    names = sorted(set.intersection(*(set(f.metrics) for f in folds)))
    values = {k: np.array([f.metrics[k] for f in folds], dtype=float) for k in names}
    method = MethodSummary(
        **identity, folds=list(snakemake.params.folds),
        mean={k: float(np.nanmean(v)) for k, v in values.items()},
        # a standard deviation over one fold is undefined (null), as in the tables
        std={k: float(np.nanstd(v, ddof=1)) if len(v) > 1 else None for k, v in values.items()},
        # mean over folds; null where the solver does not record it
        timing={k: None if np.isnan(v) else float(v) for k, v in pd.DataFrame(timing).astype(float).mean().items()},
        learned=learned, chosen=chosen_per_fold, score_ties=ties, tuning=tuning,
        random={k: float(np.nanmean([f.random[k] for f in folds]))
                for k in sorted(set.intersection(*(set(f.random) for f in folds)))})
    not_learned = method.not_learned
    # a setting has one name on the parent and its fold runs: method.x (the fold runs': the value used)
    settings = {"kind": snakemake.params.spec["kind"], "method": snakemake.params.spec.get("params") or {},
                "grid": snakemake.params.spec.get("grid") or {}}
    parent = dict(
        # the fold runs' names, holding the fold means, so one column of the runs table shows both
        metrics={**method.mean, **{f"std.{k}": v for k, v in method.std.items()},
                 **{f"random.{k}": v for k, v in method.random.items()}},
        # the settings as params (the compare view lines parents up by them; a change replaces the
        # parent, as MLflow cannot change a param) and as tags, which searches and older readers use
        params=settings,
        tags={"folds": ",".join(map(str, method.folds)), "rankstudy.learned": str(not not_learned).lower(),
              **({"rankstudy.not_learned_folds": ",".join(map(str, not_learned))} if not_learned else {})},
    )
    # every fold's test queries in one file: what the tables job reads
    atomic.write_csv(pd.concat(per_query, ignore_index=True, join="inner"), snakemake.output.per_query,
                     float_format="%.17g")
    method.write(snakemake.output.summary)
    MlflowPlan(**identity, folds=fold_plans, parent=parent).write(snakemake.output.mlflow)
    print({k: round(v, 4) for k, v in method.mean.items() if k.startswith("test.")})
