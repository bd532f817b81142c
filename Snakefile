# rankstudy: learning-to-rank experiments as a Snakemake DAG.
#   data -> features -> train -> evaluate -> report, every fold run tracked in MLflow.
# Run:  snakemake --cores 4            (config/config.yaml, see config/README.md)
# Rerun one fold:  snakemake --cores 2 --forcerun results/runs/<study>/<dataset>/<featureset>/<method>/fold3/model.json
# Where everything goes: rankstudy.pipeline.layout (docs/outputs.md).
import os
import sys
import time

from snakemake.exceptions import WorkflowError
from snakemake.utils import min_version

from rankstudy.util.memory import say_at_exit_if_a_thread_could_not_start, spare_address_space, \
    workflow_memory_problem  # standard library only

# under a small memory limit Snakemake fails without saying so ("failed to map segment" loading
# scipy below, "can't start new thread" or std::bad_alloc later): say it before anything runs
if problem := workflow_memory_problem():
    raise WorkflowError(problem)
spare_address_space()  # under ulimit -v: threads here and in the jobs share malloc arenas


# a thread Snakemake could not start ends the run with Snakemake's traceback (no onerror: when its
# scheduler raises, no hook runs): the last line says what ran out and what to do
say_at_exit_if_a_thread_could_not_start(lambda: getattr(getattr(workflow, "logger_manager", None), "get_logfile", list)())


try:
    from rankstudy.pipeline.config import load_config
    from rankstudy.pipeline.errors import ConfigError
    from rankstudy.pipeline.snakemake_timers import one_reevaluation_timer
    from rankstudy.pipeline.code_versions import other_code_lines
    from rankstudy.pipeline.summary import run_summary
    from rankstudy.tracking.errors import check_server_answers
except Exception as exc:
    if problem := workflow_memory_problem(exc):
        raise WorkflowError(problem) from None
    raise

RUN_STARTED = time.time()

one_reevaluation_timer()  # Snakemake's scheduler would start one more timer thread per finished job

min_version("9.0")

# the config, from the files and --config values to what the jobs read, in one call
# (rankstudy.pipeline.config.load_config: it reads config/config.yaml, as `configfile:` would,
# after checking its YAML); a mistake is one line naming the key, with no traceback
try:
    SETTINGS = load_config(workflow)
except ConfigError as exc:
    raise WorkflowError(str(exc)) from None
for note in SETTINGS.notes:  # what the run leaves out or falls back to, before any job
    print(f"rankstudy: {note}", file=sys.stderr)

report: "workflow/report/workflow.rst"

include: "workflow/rules/common.smk"
include: "workflow/rules/data.smk"
include: "workflow/rules/features.smk"
include: "workflow/rules/train.smk"
include: "workflow/rules/evaluate.smk"
include: "workflow/rules/report.smk"
if config.get("scorecard"):
    include: "workflow/rules/scorecard.smk"


rule all:
    input:
        all_targets(),
    default_target: True


# fits that other code made, said before anything runs (a run with nothing to do prints no closing
# summary) by the main process only (not by each SLURM job parsing this file)
if workflow.is_main_process and not config.get("scorecard"):
    for line in other_code_lines(study_fits(), config["study"]):
        print(f"rankstudy: {line}", file=sys.stderr)


# a tracking server that does not answer fails the run now, not after its training jobs
onstart:
    check_server_answers(os.environ.get("MLFLOW_TRACKING_URI", "").strip() or config["mlflow"]["tracking_uri"] or "")


# the last lines of a run: where its results are, what took the time, which fits other code made
onsuccess:
    if not workflow.dryrun:
        print(run_summary(config["study"], list(config["datasets"]), RUN_STARTED, bool(config.get("scorecard")),
                          os.environ.get("MLFLOW_TRACKING_URI") or config["mlflow"]["tracking_uri"],
                          leaderboard=bool(config["report"].get("leaderboard")), fits=study_fits()), file=sys.stderr)
