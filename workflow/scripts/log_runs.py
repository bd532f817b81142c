"""Every MLflow run of one study and data set, in one process (MLflow's import alone is seconds):
first each method's fold runs (with their candidates nested under them) and its parent, as the
aggregate jobs planned them (mlflow.json), then the study run holding the tables, then the
study's saved view of the runs table. Writes the run ids it logged (mlflow.runs.json), the record
of where this study's runs are; the tables job before it imports no MLflow."""

from pathlib import Path

from rankstudy.pipeline.jobs import job_logging
from rankstudy.pipeline.records import MlflowPlan
from rankstudy.tracking import runs as tracking
from rankstudy.tracking import views
from rankstudy.tracking.store import purge_at_end, resolve_tracking_uri
from rankstudy.util import atomic


def caption_of(markdown: Path) -> str:
    """The tables' caption: the first paragraph of their Markdown file."""
    return markdown.read_text().split("\n\n", 1)[0].strip()


with job_logging(snakemake, "log_runs"):
    w, p = snakemake.wildcards, snakemake.params
    mlflow = snakemake.config["mlflow"]  # not a param: where to log is not what the job computes
    uri, experiment = resolve_tracking_uri(mlflow["tracking_uri"], "results"), mlflow["experiment"]
    systems = []
    with purge_at_end():  # the runs it replaces, purged by one `mlflow gc` at its end, not one per fold
        for path in snakemake.input.mlflow:
            plan = MlflowPlan.read(path)
            parent_id, fold_ids = tracking.log_method(uri, experiment, plan.identity, plan.folds, plan.parent)
            print(f"MLflow: {plan.method} [{plan.featureset}] parent run {parent_id}, fold runs "
                  + ", ".join(f"{fold}: {run_id}" for fold, run_id in fold_ids.items()))
            systems.append({"method": plan.method, "featureset": plan.featureset, "parent_run_id": parent_id,
                            "fold_run_ids": {str(fold): run_id for fold, run_id in fold_ids.items()}})
        tables = [Path(f) for f in snakemake.input.tables]
        study_id = tracking.log_study_run(uri, experiment, study=w.study, dataset=w.dataset, artifacts=tables,
                                          params={"baseline": p.baseline, "folds": p.folds,
                                                  "caption": caption_of(Path(snakemake.input.caption))})
    # the runs table the UI opens on (the addresses bootstrap.py ui prints): this study's runs, these metrics
    view = views.save_runs_view(uri, experiment, [f"test.{m}" for m in p.metrics], w.study)
    atomic.write_json(snakemake.output.runs, {"study": w.study, "dataset": w.dataset, "experiment": experiment,
                                              "view": view, "study_run_id": study_id, "systems": systems})
    print(f"summary: {sum(len(s['fold_run_ids']) for s in systems)} fold runs of {len(systems)} systems, "
          f"study run {study_id}, view {view}")
