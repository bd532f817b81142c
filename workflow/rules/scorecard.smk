# A scorecard run (config key `scorecard`): every member study runs to its end on `datasets`
# through the Snakemake CLI, one after the other, then the reproduction scorecard is written
# over their published cells. A member is its own Snakemake run (its own config, so its own
# protocol), which is why it is a job here and not a module: the studies differ in every section.
import shlex
import sys

import yaml

from rankstudy.pipeline import forensics
from rankstudy.util import atomic

SCORECARD = config["scorecard"]
if len(DATASETS) != 1:  # the card's rows are the published cells of one data set
    raise WorkflowError(f"config key datasets: a scorecard run takes one data set, got {DATASETS}")
MEMBERS = {}  # study name -> its config file
for path in SCORECARD["studies"]:
    name = (yaml.safe_load(Path(path).read_text()) or {}).get("study")
    if not name:
        raise WorkflowError(f"config key scorecard.studies: {path} names no `study`")
    MEMBERS[name] = path
for name in SCORECARD.get("claims", {}):
    if name not in MEMBERS:
        raise WorkflowError(f"config key scorecard.claims.{name}: not one of scorecard.studies ({', '.join(MEMBERS)})")

# Protocol forensics (scorecard.forensics): each base study rerun under each variant of its
# protocol, as a study of its own whose config this run writes (rankstudy.pipeline.forensics)
FORENSICS = SCORECARD.get("forensics")
VARIANTS = {}  # variant study -> its config, data set, base study and variant
for base, methods in (FORENSICS or {}).get("bases", {}).items():
    if base not in MEMBERS:
        raise WorkflowError(f"config key scorecard.forensics.bases.{base}: not one of scorecard.studies "
                            f"({', '.join(MEMBERS)})")
    base_config = yaml.safe_load(Path(MEMBERS[base]).read_text())
    for name, spec in FORENSICS["variants"].items():
        if name == forensics.AS_STUDY:
            raise WorkflowError(f"config key scorecard.forensics.variants.{name}: the name is the study as configured")
        if spec.get("bases") and base not in spec["bases"]:
            continue
        try:
            variant = forensics.variant_config(base_config, methods, name, spec, f"scorecard.forensics.bases.{base}")
        except ValueError as exc:
            raise WorkflowError(str(exc)) from None
        VARIANTS[variant["study"]] = {"config": variant, "dataset": spec.get("dataset", DATASETS[0]), "base": base,
                                      "variant": name, "choice": spec["choice"], "label": spec.get("label", name)}


def member_config(study: str) -> str:
    return MEMBERS[study] if study in MEMBERS else L.fill(L.STUDY_CONFIG, study=study)


def member_command(wildcards, threads):
    """The Snakemake CLI for one member study on one data set. --nolock: this run holds the
    directory's lock, and the member writes only its own study's files and the shared data."""
    overrides = [f"data_root={config['data_root']}", f"datasets=[{wildcards.dataset}]"]
    return shlex.join([sys.executable, "-m", "snakemake", "--cores", str(threads), "--nolock", "--rerun-incomplete",
                       "--configfile", member_config(wildcards.study), "--config", *overrides])


def member_config_text(wildcards) -> str:
    """What a member runs: a changed study config (or variant) reruns it."""
    if wildcards.study in VARIANTS:
        return yaml.safe_dump(VARIANTS[wildcards.study]["config"], sort_keys=False)
    return Path(MEMBERS[wildcards.study]).read_text()


if VARIANTS:

    rule study_config:
        output:
            L.STUDY_CONFIG,
        params:
            text=member_config_text,
        wildcard_constraints:
            study=alternatives(VARIANTS),
        run:
            atomic.write_text(output[0], "# written by the scorecard run (scorecard.forensics); do not edit\n"
                              + params.text)


rule run_study:
    input:
        lambda w: [L.fill(L.STUDY_CONFIG, study=w.study)] if w.study in VARIANTS else [],
    output:
        L.STUDY_COMPLETE,
    params:
        command=member_command,
        config_text=member_config_text,
    log:
        L.log("run_study"),
    threads: workflow.cores
    wildcard_constraints:
        study=alternatives([*MEMBERS, *VARIANTS]),
        dataset=alternatives({*DATASETS, *(v["dataset"] for v in VARIANTS.values())}),
    run:
        # the member's progress goes to the terminal and to the log
        shell("set -o pipefail; echo {params.command:q} > {log}; {params.command} 2>&1 | tee -a {log} >&2")
        atomic.write_json(output[0], {"study": wildcards.study, "dataset": wildcards.dataset,
                                      "config": member_config(wildcards.study), "command": params.command,
                                      "finished": time.time()})


if FORENSICS:

    rule forensics:
        input:
            expand(L.STUDY_COMPLETE, study=list(FORENSICS["bases"]), dataset=DATASETS),
            [L.fill(L.STUDY_COMPLETE, study=v, dataset=spec["dataset"]) for v, spec in VARIANTS.items()],
        output:
            md=f"{L.FORENSICS}.md",
            csv=f"{L.FORENSICS}.csv",  # the report shows the html (a CSV would open empty there)
            cells=f"{L.FORENSICS}.cells.csv",
            html=report(f"{L.FORENSICS}.html", caption="../report/forensics.rst", category="Scorecard"),
            png=report(f"{L.FORENSICS}.png", caption="../report/forensics.rst", category="Scorecard"),
        params:
            bases={base: {"config": MEMBERS[base], "methods": methods} for base, methods in FORENSICS["bases"].items()},
            variants={v: {k: spec[k] for k in ("dataset", "base", "variant", "choice", "label")}
                      for v, spec in VARIANTS.items()},
            dataset=DATASETS[0],
            n_resamples=SCORECARD["n_resamples"],
            confidence=SCORECARD["confidence"],
            seed=config["seed"],
        log:
            L.log("forensics"),
        benchmark:
            L.benchmark("forensics")
        threads: 1
        conda:
            ENV
        script:
            "../scripts/forensics.py"


rule scorecard:
    input:
        expand(L.STUDY_COMPLETE, study=list(MEMBERS), dataset=DATASETS),
        forensics=[f"{L.FORENSICS}.cells.csv"] if FORENSICS else [],
    output:
        md=f"{L.SCORECARD}.md",
        csv=f"{L.SCORECARD}.csv",  # the report shows the html (a CSV would open empty there)
        html=report(f"{L.SCORECARD}.html", caption="../report/scorecard.rst", category="Scorecard"),
        conventions=f"{L.SCORECARD}.conventions.csv",
        beyond=f"{L.SCORECARD}.beyond.csv",
    params:
        members=MEMBERS,
        datasets=DATASETS,
        claims=SCORECARD.get("claims", {}),
        n_resamples=SCORECARD["n_resamples"],
        confidence=SCORECARD["confidence"],
        seed=config["seed"],
    log:
        L.log("scorecard"),
    benchmark:
        L.benchmark("scorecard")
    threads: 1
    conda:
        ENV
    script:
        "../scripts/scorecard.py"
