"""The config through the real `snakemake` CLI: two studies that spell one protocol differently
share its data and feature sets and rerun nothing of each other, and the command line's methods,
lists and baseline reach the jobs as a YAML file's would (rankstudy.pipeline.config.load_config)."""

from __future__ import annotations

import json
import re
import subprocess

import yaml

from pipeline_runs import REPO, SNAKEMAKE, job_counts, make_workdir, run_dir, snakemake

TINY_STUDY = {"folds": [1], "methods": {"pointwise": {"kind": "linear", "params": {"loss": "pointwise_mse"},
                                                      "grid": {"l2": [1.0]}}},
              "features": {"normalization": "zscore", "first_order": True, "rho": []},
              "report": {"baseline": "pointwise", "metrics": ["ndcg@10"], "n_resamples": 200}}


def study_file(workdir, name: str, **sections) -> tuple[str, str]:
    """A complete config (the tests' runs replace config.yaml) written with the key order given,
    and the path of its fold 1 model, the target a run of it is asked for."""
    config = {**yaml.safe_load((REPO / "config/config.yaml").read_text()), **TINY_STUDY, "study": name, **sections}
    (workdir / f"{name}.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    return f"{name}.yaml", str((run_dir(workdir, "pointwise", 1, study=name) / "model.json").relative_to(workdir))


def test_studies_spelling_one_protocol_differently_share_its_work_and_rerun_nothing(tmp_path):
    """config.yaml has no binarize and the leaderboard binarize: []: the same cleaned folder, but
    the clean job's params differed, so the second study cleaned again, and the first then
    retrained everything ("Params have changed since last execution"). Study B says A's protocol
    in other words: binarize: [], near_duplicates at its defaults, rel_threshold 1.0, dtype
    float64 written out, the generator's and the evaluation's keys in another order."""
    workdir = make_workdir(tmp_path, {})
    a, model_a = study_file(workdir, "A", synthetic={"n_queries": 60, "n_features": 17},
                            cleaning={"drop_no_relevant": ["train"], "chakrabarti": []})
    b, model_b = study_file(
        workdir, "B", synthetic={"n_features": 17, "n_queries": 60},
        cleaning={"binarize": [], "chakrabarti": [], "drop_no_relevant": ["train"], "near_duplicates": {"side": "both"}},
        features={**TINY_STUDY["features"], "dtype": "float64"},
        evaluation={"no_relevant": "zero", "rel_threshold": 1.0, "selection_metric": "ndcg@10",
                    "metrics": ["ndcg@10", "map"]})
    snakemake(workdir, model_a, configfile=a)
    out = snakemake(workdir, model_b, configfile=b)
    assert job_counts(out.stdout + out.stderr) == {"train": 1}, out.stderr  # A's data and features, as they are
    again = snakemake(workdir, "--dry-run", model_a, configfile=a)
    assert "Nothing to be done" in again.stdout + again.stderr, again.stdout


def test_command_line_methods_lists_and_baseline_reach_the_jobs(tmp_path):
    """On the default study: a method changed without its kind keeps the rest of its spec, a new
    neural method's hidden: [64, 32] is a list of numbers (it was refused as ['64', '32']), and
    run_methods without the baseline compares against the first method run, saying so."""
    workdir = make_workdir(tmp_path, {})
    out = subprocess.run(
        # no workflow profile: its terminal logger may shorten the shell commands read here
        [SNAKEMAKE, "--cores", "1", "--dry-run", "--printshellcmds", "--workflow-profile", "none", "--config", "folds=[1]", "features={rho: []}",
         "methods={listnet: {params: {max_iter: 50}}, m: {kind: neural, params: {hidden: [64, 32], epochs: 2}}}",
         "run_methods=[m, listnet]"], cwd=workdir, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    specs = {json.loads(job)["wildcards"]["method"]: json.loads(job)["params"]["spec"]
             for job in re.findall(r" train '(\{.*?\})'", out.stdout)}
    assert specs == {"m": {"kind": "neural", "params": {"hidden": [64, 32], "epochs": 2}},
                     "listnet": {"kind": "linear", "params": {"loss": "listnet", "max_iter": 50},
                                 "grid": {"l2": [1.0e-4, 1.0e-2, 1.0]}}}
    assert ("rankstudy: report.baseline 'ranknet' is not among the methods run; the tables compare against 'm', "
            "the first method run") in out.stderr
