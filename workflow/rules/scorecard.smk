# A scorecard run (config key `scorecard`): every member study runs to its end on `datasets`
# through the Snakemake CLI, one after the other, then the reproduction scorecard is written
# over their published cells. A member is its own Snakemake run (its own config, so its own
# protocol), which is why it is a job here and not a module: the studies differ in every section.
import shlex
import sys

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


def member_command(wildcards, threads):
    """The Snakemake CLI for one member study on one data set. --nolock: this run holds the
    directory's lock, and the member writes only its own study's files and the shared data."""
    overrides = [f"data_root={config['data_root']}", f"datasets=[{wildcards.dataset}]"]
    return shlex.join([sys.executable, "-m", "snakemake", "--cores", str(threads), "--nolock", "--rerun-incomplete",
                       "--configfile", MEMBERS[wildcards.study], "--config", *overrides])


rule run_study:
    output:
        L.STUDY_COMPLETE,
    params:
        command=member_command,
        config_text=lambda w: Path(MEMBERS[w.study]).read_text(),  # a changed study config reruns it
    log:
        L.log("run_study"),
    threads: workflow.cores
    wildcard_constraints:
        study="|".join(re.escape(m) for m in MEMBERS),
    run:
        # the member's progress goes to the terminal and to the log
        shell("set -o pipefail; echo {params.command:q} > {log}; {params.command} 2>&1 | tee -a {log} >&2")
        atomic.write_json(output[0], {"study": wildcards.study, "dataset": wildcards.dataset,
                                      "config": MEMBERS[wildcards.study], "command": params.command,
                                      "finished": time.time()})


rule scorecard:
    input:
        expand(L.STUDY_COMPLETE, study=list(MEMBERS), dataset=DATASETS),
    output:
        md=f"{L.SCORECARD}.md",
        csv=report(f"{L.SCORECARD}.csv", caption="../report/scorecard.rst", category="Scorecard"),
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
