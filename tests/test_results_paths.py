"""No machine's paths in results: the data jobs record file names relative to data_root (or the
project), so results/ can move to another machine, and a user's own data set (a `local`
entry in a registry file given with `registry_extra`) runs through the real CLI."""

from __future__ import annotations

import json
import runpy
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from rankstudy.data import registry as datasets, sources
from rankstudy.pipeline import layout
from rankstudy.pipeline.stepjob import Named  # what Snakemake hands a script: items by name or index, and by attribute

REPO = Path(__file__).resolve().parents[1]
SCRIPTS = REPO / "workflow" / "scripts"
SNAKEMAKE = str(Path(sys.executable).with_name("snakemake"))


def run_script(name: str, monkeypatch, **parts) -> None:
    monkeypatch.setattr(sys, "stdout", sys.stdout)  # job_logging swaps the streams; put pytest's back after
    monkeypatch.setattr(sys, "stderr", sys.stderr)
    runpy.run_path(str(SCRIPTS / name), init_globals={"snakemake": Named(parts)})


def machine_paths(text: str, *roots: Path) -> list[str]:
    return [str(r) for r in roots if str(r) in text]


def write_toy(folder: Path) -> None:
    for s, q in (("train", 1), ("vali", 2), ("test", 3)):
        (folder / "Fold1").mkdir(parents=True, exist_ok=True)
        (folder / "Fold1" / f"{s}.txt").write_text(f"2 qid:{q} 1:0.5 2:0.1\n0 qid:{q} 1:0.2 2:0.3\n")


@pytest.mark.parametrize("entry_source", ["local", "download"])
def test_data_jobs_record_paths_relative_to_data_root(tmp_path, monkeypatch, entry_source):
    """An absolute data_root (as `--config data_root=/abs/path` gives) appears in no output or log."""
    data_root = tmp_path / "machine-specific" / "data"
    write_toy(data_root / "Toy")
    entry = {"source": entry_source, "labels": [0, 2], "folds": 1, "layout": "Fold{fold}/{split}.txt",
             "n_features": 2}
    if entry_source == "download":  # files already in place: used as they are, nothing fetched
        entry.update(url="http://127.0.0.1:9/Toy.zip", archive="zip", sha256=None)
    entry = datasets.validate_entry("Toy", entry)
    project = tmp_path / "project"
    project.mkdir()
    monkeypatch.chdir(project)
    config = {"folds": [1], "data_root": str(data_root)}
    run_script("fetch_dataset.py", monkeypatch, wildcards=Named(data="Toy"),
               params=Named(dataset="Toy", source=sources.source_settings(entry, config)),
               config=config, output=Named({0: "results/data/Toy/source.json"}),
               log=["results/logs/fetch_dataset/Toy.log"])
    source = json.loads(Path("results/data/Toy/source.json").read_text())
    assert source["root"] == "Toy" and source["paths"] == "relative to data_root" and "data_root" not in source
    outputs = {s: f"results/data/Toy/fold1/{s}.npz" for s in ("train", "vali", "test")}
    run_script("parse_fold.py", monkeypatch, wildcards=Named(data="Toy", fold="1"),
               params=Named(dataset="Toy"), config=config,
               input=Named({0: "results/data/Toy/source.json"}),
               output=Named({**outputs, "meta": "results/data/Toy/fold1/parsed.json"}),
               log=["results/logs/parse_fold/Toy/fold1.log"])
    meta = json.loads(Path("results/data/Toy/fold1/parsed.json").read_text())
    assert meta["files"] == {s: f"Toy/Fold1/{s}.txt" for s in ("train", "vali", "test")}
    log = Path("results/logs/parse_fold/Toy/fold1.log").read_text()
    assert "parsing {data_root}/Toy/Fold1/train.txt" in log
    for path in Path("results").rglob("*"):
        if path.suffix in (".json", ".log"):
            assert machine_paths(path.read_text(), tmp_path) == [], path


def test_a_failing_data_job_leaves_no_output(tmp_path, monkeypatch):
    data_root = tmp_path / "data"
    write_toy(data_root / "Toy")
    (data_root / "Toy" / "Fold1" / "vali.txt").write_text("2 qid:2 1:0.5\n5 qid:2 1:0.1\n")  # label 5 > 2
    entry = datasets.validate_entry("Toy", {"source": "local", "labels": [0, 2], "folds": 1,
                                            "layout": "Fold{fold}/{split}.txt"})
    monkeypatch.chdir(tmp_path)
    Path("results/data/Toy").mkdir(parents=True)
    Path("results/data/Toy/source.json").write_text(json.dumps({"name": "Toy", "source": "local", "root": "Toy",
                                                                "seed": 0, "entry": entry}))
    outputs = {s: f"results/data/Toy/fold1/{s}.npz" for s in ("train", "vali", "test")}
    with pytest.raises(SystemExit):
        run_script("parse_fold.py", monkeypatch, wildcards=Named(data="Toy", fold="1"),
                   params=Named(dataset="Toy"), config={"data_root": "data"},
                   input=Named({0: "results/data/Toy/source.json"}),
                   output=Named({**outputs, "meta": "results/data/Toy/fold1/parsed.json"}),
                   log=["results/logs/parse_fold/Toy/fold1.log"])
    assert not Path("results/data/Toy/fold1").exists()
    log = Path("results/logs/parse_fold/Toy/fold1.log").read_text()
    assert "error: data/Toy/Fold1/vali.txt:2: label 5 is outside this data set's label range 0..2" in log


@pytest.mark.slow
def test_users_own_data_set_through_the_cli_leaves_no_machine_path(tmp_path, shared_data):
    """The docs' example (docs/datasets.md): MQ2008's folder plays "my data" as a `local` entry of a registry file of
    the user's own, with an absolute data_root; then results/ is grepped for machine paths."""
    for name in ("Snakefile", "workflow", "config", "environment.yml"):
        src = REPO / name
        (shutil.copytree if src.is_dir() else shutil.copy)(src, tmp_path / name)
    (tmp_path / "my-datasets.yaml").write_text(yaml.safe_dump({"MyLetor": {
        "source": "local", "folder": "MQ2008", "labels": [0, 2], "folds": 5, "layout": "Fold{fold}/{split}.txt"}}))
    config = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    config.update(methods={"ranknet": config["methods"]["ranknet"]}, features={"normalization": "zscore", "rho": []},
                  report={**config["report"], "n_resamples": 200})
    (tmp_path / "small.yaml").write_text(yaml.safe_dump(config))
    out = subprocess.run([SNAKEMAKE, "--cores", "2", "--configfile", "small.yaml", "--config",
                          "registry_extra=my-datasets.yaml", "datasets=[MyLetor]", f"data_root={shared_data}",
                          "folds=[1]"], cwd=tmp_path, capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, out.stderr[-3000:]
    entry = datasets.load_registry(tmp_path / "my-datasets.yaml")["MyLetor"]
    config = yaml.safe_load((tmp_path / "small.yaml").read_text())
    meta_path = layout.fill(layout.FOLD_META, fold=1, **layout.protocol("MyLetor", entry, config).keys())
    meta = json.loads((tmp_path / meta_path).read_text())
    assert meta["files"]["train"] == "MQ2008/Fold1/train.txt.gz" and meta["test.n_queries"] == 156
    assert (tmp_path / "results/tables/default/MyLetor.md").exists()
    found = {}
    for path in (tmp_path / "results").rglob("*"):
        if path.is_file() and path.suffix in (".json", ".log", ".tsv", ".csv", ".md", ".txt"):
            hits = machine_paths(path.read_text(errors="replace"), shared_data.resolve(), tmp_path)
            if hits:
                found[str(path.relative_to(tmp_path))] = hits
    assert found == {}
