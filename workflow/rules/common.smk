# Shared helpers: config checks that need the package, the protocol of each data set, wildcard
# constraints, input functions and target lists. Every path comes from rankstudy.pipeline.layout.
import asyncio
import json
import re
import shlex
import sys
from pathlib import Path

from rankstudy.pipeline import layout as L
from rankstudy.pipeline.config import evaluate_params, run_methods
from rankstudy.rankers.registry import ranker_class
from rankstudy.data.sources import source_settings
from snakemake.exceptions import NestedCoroutineError
from snakemake.settings.types import DeploymentMethod

# SETTINGS: what the Snakefile's load_config derived from the checked config
FEATURESETS = SETTINGS.featuresets  # name -> FeatureSet
METHODS = run_methods(config)
DATASETS = list(config["datasets"])
FOLDS = [int(f) for f in config["folds"]]
SPLITS = ["train", "vali", "test"]
STUDY = config["study"]
# each data set's folder, cleaning and normalisation names (see rankstudy.pipeline.layout)
PROTOCOLS = {d: L.protocol(d, SETTINGS.registry[d], config) for d in DATASETS}
DATASET_OF = {p.data: d for d, p in PROTOCOLS.items()}
# The jobs' software: this environment (used with `--sdm conda`; otherwise the current one).
ENV = "../../environment.yml"

# The per-fold jobs (train, evaluate) run their script by `shell:`: `script:` would import
# snakemake into each (about 0.1 s, their largest fixed cost; rankstudy.pipeline.stepjob). They
# use the Python Snakemake runs on, as `script:` does, or the environment's under `--sdm conda`.
PYTHON = "python" if DeploymentMethod.CONDA in workflow.deployment_settings.deployment_method else sys.executable
STEP_SHELL = "{params.step} --log {log:q} --threads {threads} --mem-mb {resources.mem_mb}"


def step_command(name, params):
    """The `step` param of the per-fold job ``name`` (its shell command is STEP_SHELL): the Python,
    workflow/scripts/<name>.py and the job (wildcards, inputs, outputs and ``params``: values or
    functions of the wildcards) as one JSON argument, quoted for the shell. Snakemake leaves a
    param made from inputs or outputs out of its rerun check, so a moved venv or checkout reruns
    nothing; for the same reason the jobs keep ``params`` as params of their own too, and a
    changed spec still retrains."""
    script = Path(workflow.basedir) / "workflow" / "scripts" / f"{name}.py"
    prefix = f"{shlex.quote(PYTHON)} {shlex.quote(str(script))} {name}"

    def step(wildcards, input, output):
        job = {"wildcards": dict(wildcards.items()), "input": dict(input.items()), "output": dict(output.items()),
               "params": {k: v(wildcards) if callable(v) else v for k, v in params.items()}}
        return f"{prefix} {shlex.quote(json.dumps(job))}"

    return step


# What model selection needs: changing a report metric must not retrain. EVALUATION: the
# section as jobs see it (extra_metrics already in metrics, and named only when there are some).
EVALUATION = evaluate_params(config["evaluation"])
SELECTION = {k: EVALUATION[k] for k in ("selection_metric", "rel_threshold", "no_relevant")}
# The MLflow settings (config key mlflow) are no job's params: the logging job (log_runs)
# reads them from the config, so a changed store reruns nothing and no store path is
# shown in the report. MLFLOW_TRACKING_URI still wins inside the jobs.


# What one job asks a scheduler for (SLURM through profiles/slurm; locally only `threads`
# counts, and mem_mb when --resources mem_mb=N is given). A job's BLAS, OpenMP and LightGBM use
# exactly its `threads` (rankstudy.util.threads, set as the job starts), so single-threaded jobs
# side by side do not oversubscribe the cores.
# Sized from measurements (docs/scale-out.md, "Threads, memory and time per job"): a whole SLURM job peaked at 430-730 MB
# (about 420 MB of it Snakemake: the jobstep and the job's own process; the script 110-330 MB,
# growing by at most 1.5 MB per MB of input), and the longest script took 25 s. mem_mb and
# runtime (minutes) double on the second attempt (--retries) and triple on the third, so a job
# killed for memory or time asks for more.
def input_size_mb(input):
    """input.size_mb, refused inside a running event loop as Snakemake itself would refuse it.
    `snakemake --report` evaluates resources inside one: there input.size_mb makes a coroutine
    that Snakemake cannot run (NestedCoroutineError, which it takes as "to be determined") and
    never closes, so Python warns "coroutine ... was never awaited" (Snakemake 9.27). Raising
    the same error before the coroutine exists gives the same result without the warning."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:  # no loop: the normal case, in the scheduler and in jobs
        return input.size_mb
    raise NestedCoroutineError("input sizes are not read inside a running event loop")


def job_mem_mb(base=1000, per_input_mb=0.0):
    def mem_mb(wildcards, input, attempt):
        return int(base + per_input_mb * input_size_mb(input)) * attempt

    return mem_mb


def job_runtime(base=10, per_input_mb=0.0):
    def runtime(wildcards, input, attempt):
        return int(base + per_input_mb * input_size_mb(input)) * attempt

    return runtime


# A fold's parsed and cleaned splits are each as large as one feature set; at MSLR-WEB30K size
# users may let Snakemake delete them once every feature set is built (features.keep_prepared: false).
def prepared_split(path):
    return path if config["features"]["keep_prepared"] else temp(path)


# Threads of a method's train job: its `threads` entry, else PARALLEL_THREADS for rankers whose
# fit uses threads (LightGBM) when the training split is at least PARALLEL_MIN_MB, 1 for the rest
# (they gain more from running side by side). Measured with one lambdamart fit alone on 2 cores
# (benchmarks/bench_lightgbm_threads.py): 2 threads took 1.9-2.0x as long as 1 on MQ2008 and
# OHSUMED Fold1 (3.4 MB of features), 0.79x at 12.5 MB, 0.66x at 31 MB, 0.61x at 62 MB. Before
# the split exists (the DAG is built before the features are) the job counts PARALLEL_THREADS; Snakemake
# re-evaluates it once its input is there, before the job is scheduled. Snakemake scales a
# job's threads down to --cores.
PARALLEL_THREADS = 4
PARALLEL_MIN_MB = 32


def train_threads(wildcards, input):
    spec = config["methods"][wildcards.method]
    if spec.get("threads") or not ranker_class(spec["kind"]).parallel:
        return spec.get("threads") or 1
    split = Path(input.train)
    if not split.exists():
        return PARALLEL_THREADS
    return PARALLEL_THREADS if split.stat().st_size >= PARALLEL_MIN_MB * 2**20 else 1


def training_spec(wildcards):
    """What changes training: the method's entry without its thread count (nor, for a tuned one,
    how many workers run its trials: the same trials give the same model)."""
    spec = {k: v for k, v in config["methods"][wildcards.method].items() if k != "threads"}
    if spec.get("tune"):
        spec["tune"] = {k: v for k, v in spec["tune"].items() if k != "workers"}
    return spec


def tune_workers(wildcards):
    """The tuning workers' records a tuned method's train job waits for (tune.workers > 1)."""
    tune = config["methods"][wildcards.method].get("tune") or {}
    if tune.get("workers", 1) <= 1:
        return []
    return [L.fill(L.TUNE_WORKER, worker=k, **dict(wildcards.items())) for k in range(1, tune["workers"] + 1)]


def tune_base(wildcards):
    """A tuned twin's untuned method's fit on the same fold (tune.base_method): what it selected
    there is the first trial, so tuning starts from the untuned model (rankstudy.selection.tuning)."""
    base = (config["methods"][wildcards.method].get("tune") or {}).get("base_method")
    if not base:
        return []
    return L.fill(f"{L.FOLD_DIR}/{L.TRAIN_OUTPUTS['fit']}", study=wildcards.study, dataset=wildcards.dataset,
                  featureset=wildcards.featureset, method=base, fold=wildcards.fold)


def tune_storage(wildcards):
    """Where a tuned method's Optuna study lives, as its job is told on its command line: tune.storage
    (a database URL), else a journal file per method and fold under results/tuning/ (one machine);
    "" for a method that is not tuned. RANKSTUDY_TUNE_STORAGE (which setup/cluster/mlflow-server.sh
    exports: its PostgreSQL's optuna database) wins in the job itself, so its password never shows on
    a command line (`ps`)."""
    if not config["methods"][wildcards.method].get("tune"):
        return ""
    url = (config.get("tune") or {}).get("storage")
    return url or L.fill(L.TUNING_JOURNAL, **dict(wildcards.items()))


def alternatives(values):
    return "|".join(map(re.escape, values))


# Only this config's study, data, protocol, feature sets and methods can be made by this run:
# a path of another study or protocol is never (re)built from this config.
wildcard_constraints:
    study=re.escape(STUDY),
    dataset=alternatives(DATASETS),
    data=alternatives(DATASET_OF),
    cleaning=alternatives({p.cleaning for p in PROTOCOLS.values()}),
    norm=alternatives({p.norm for p in PROTOCOLS.values()}),
    featureset=alternatives(FEATURESETS),
    method=alternatives(METHODS),
    fold=r"\d+",
    worker=r"\d+",
    split="train|vali|test",


def protocol_keys(w):
    """The data, cleaning and norm names of the run's data set ``w.dataset``."""
    return PROTOCOLS[w.dataset].keys()


def features_of(w, split):
    return L.fill(L.FEATURES, featureset=w.featureset, fold=w.fold, split=split, **protocol_keys(w))


def evaluation_of(w):
    """The evaluate job's params: EVALUATION, or the evaluation the fold's saved outputs were
    made with when they differ only by extra metrics since dropped (evaluate_params)."""
    resolved = Path(L.fill(f"{L.FOLD_DIR}/{L.EVALUATE_OUTPUTS['resolved']}", study=w.study, dataset=w.dataset,
                           featureset=w.featureset, method=w.method, fold=w.fold))
    saved = json.loads(resolved.read_text())["evaluation"] if resolved.exists() else None
    return evaluate_params(config["evaluation"], saved)


def fold_meta_of(w):
    return L.fill(L.FOLD_META, fold=w.fold, **protocol_keys(w))


def correlations_if_needed(w):
    """Only second-order feature sets need the pair correlations of their fold."""
    if not FEATURESETS[w.featureset].second_order:
        return []
    return [L.fill(L.CORRELATIONS, data=w.data, cleaning=w.cleaning, norm=w.norm, fold=w.fold)]


def fold_files(w, name):
    """One file of every fold of a (study, dataset, feature set, method), in FOLDS order."""
    return [L.fill(f"{L.FOLD_DIR}/{name}", study=w.study, dataset=w.dataset, featureset=w.featureset,
                   method=w.method, fold=f) for f in FOLDS]


def fold_benchmarks(w, rule):
    """The benchmark file of ``rule``'s job behind every fold of this method, in FOLDS order."""
    keys = dict(study=w.study, dataset=w.dataset, featureset=w.featureset, method=w.method, **protocol_keys(w))
    return [L.fill(L.benchmark(rule), fold=f, **keys) for f in FOLDS]


def aggregate_inputs(w):
    inputs = {key: fold_files(w, name) for key, name in {**L.TRAIN_OUTPUTS, **L.EVALUATE_OUTPUTS}.items()}
    inputs.update({f"bench_{rule}": fold_benchmarks(w, rule)
                   for rule in ("parse_fold", "clean_fold", "featurize", "train", "evaluate")})
    return inputs


def study_systems():
    """(method, feature set) of every system of the study, in table order: methods in config
    order, each with its feature sets."""
    return [{"method": m, "featureset": f, "system": L.system_label(m, f)} for m in METHODS for f in FEATURESETS]


def dataset_per_query(w):
    """Test metrics per query of every system (study_systems order), all folds in one file each."""
    return [L.fill(L.METHOD_PER_QUERY, study=w.study, dataset=w.dataset, **s) for s in study_systems()]


def dataset_test_scores(w):
    """With ``paper.convention``: the written test scores of every system (study_systems order),
    each a list over FOLDS, for the paper table to re-score; otherwise nothing."""
    if not config.get("paper", {}).get("convention"):
        return {}
    name = L.EVALUATE_OUTPUTS["scores_test"]
    return {f"scores_{i}": [L.fill(f"{L.FOLD_DIR}/{name}", study=w.study, dataset=w.dataset, fold=f, **s)
                            for f in FOLDS]
            for i, s in enumerate(study_systems())}


def dataset_summaries(w):
    return [L.fill(L.METHOD_SUMMARY, study=w.study, dataset=w.dataset, **s) for s in study_systems()]


def dataset_mlflow_plans(w):
    return [L.fill(L.METHOD_MLFLOW, study=w.study, dataset=w.dataset, **s) for s in study_systems()]


def dataset_fold_metas(w):
    """meta.json of every fold (FOLDS order): the cleaned splits' sizes, validation included."""
    return [L.fill(L.FOLD_META, fold=f, **protocol_keys(w)) for f in FOLDS]


def dataset_transforms(w):
    """transform.json of every (feature set, fold): {feature set: [per fold]}."""
    return {f"transform_{fs}": [L.fill(L.TRANSFORM, featureset=fs, fold=f, **protocol_keys(w)) for f in FOLDS]
            for fs in FEATURESETS}


def delta_smear_train(w):
    """The cleaned training split of the fold whose sampled Deltas report.delta_smear plots."""
    fold = config["report"]["delta_smear"].get("fold", FOLDS[0])
    return L.fill(L.CLEANED, fold=fold, split="train", **protocol_keys(w))


def table_in_report(path, table, file, caption):
    """``path`` in `snakemake --report`, under Tables > data set, labelled by its table and the
    file it shows (the labels name the entries, instead of their paths)."""
    return report(path, caption=f"../report/{caption}", category="Tables", subcategory="{dataset}",
                  labels={"table": table, "file": file})


def table_page(table, caption, suffix):
    """The page of the table file ``{L.TABLES}.{suffix}`` in the report (rankstudy.reporting.pages:
    the report's viewer shows HTML, while a CSV, Markdown or LaTeX file would open empty)."""
    return table_in_report(f"{L.REPORT_PAGES}.{suffix}.html", table, suffix, caption)


def study_fits():
    """fit.json of every fold of every system of the run (its results, and the code that made them)."""
    return expand(f"{L.FOLD_DIR}/{L.TRAIN_OUTPUTS['fit']}", study=STUDY, dataset=DATASETS, featureset=FEATURESETS,
                  method=METHODS, fold=FOLDS)


def all_targets():
    if config.get("scorecard"):  # the member studies' own targets are theirs to name
        return [f"{L.SCORECARD}.md", f"{L.SCORECARD}.html"]
    targets = [f"{L.TABLES}.md", f"{L.PLOTS}.ndcg_at_k.png", L.RUNS_LOGGED]
    if config.get("paper"):
        targets.append(f"{L.TABLES}.paper.md")
    if config["report"].get("sweep"):
        targets.append(f"{L.PLOTS}.sweep.png")
    if config["report"].get("delta_smear"):
        targets.append(f"{L.PLOTS}.delta_smear.png")
    if config["report"].get("leaderboard"):
        targets.append(f"{L.LEADERBOARD}.md")
    # every fold's and method's files too: Snakemake does not remake a missing file that only feeds
    # outputs it finds up to date, so a fold whose job failed, or a method whose MLflow logging
    # failed (Snakemake removed log_runs' output), would stay missing and unlogged
    folds = [f"{L.FOLD_DIR}/{name}" for name in {**L.TRAIN_OUTPUTS, **L.EVALUATE_OUTPUTS}.values()]
    return (expand(targets, study=STUDY, dataset=DATASETS)
            + expand([L.METHOD_SUMMARY, L.METHOD_PER_QUERY, L.METHOD_MLFLOW], study=STUDY, dataset=DATASETS,
                     featureset=FEATURESETS, method=METHODS)
            + expand(folds, study=STUDY, dataset=DATASETS, featureset=FEATURESETS, method=METHODS, fold=FOLDS))
