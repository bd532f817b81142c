# rankstudy: learning-to-rank experiments as a Snakemake DAG.
#   data -> features -> train -> evaluate -> report, every fold run tracked in MLflow.
# Run:  snakemake --cores 4            (config/config.yaml, see config/README.md)
# Rerun one fold:  snakemake --cores 2 --forcerun results/runs/<dataset>/<featureset>/<method>/fold3/model.json
from snakemake.utils import min_version, validate

min_version("9.0")

configfile: "config/config.yaml"

# `--config 'folds=[3]'` arrives as strings: accept digits there
config["folds"] = [int(f) if str(f).isdigit() else f for f in config.get("folds", [])]

validate(config, "workflow/schemas/config.schema.yaml")

report: "workflow/report/workflow.rst"

include: "workflow/rules/common.smk"
include: "workflow/rules/data.smk"
include: "workflow/rules/features.smk"
include: "workflow/rules/train.smk"
include: "workflow/rules/evaluate.smk"
include: "workflow/rules/report.smk"


rule all:
    input:
        all_targets(),
    default_target: True
