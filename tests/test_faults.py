"""Faults and inputs a user met, each with a clear message naming the file, line or key, and
before any job where it can be known."""

from __future__ import annotations

import errno
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml

from rankstudy.data import registry as datasets
from rankstudy.data.folds import EmptySplitError, Fold, clean, load_fold
from rankstudy.data.rankdata import RankData
from rankstudy.pipeline.config import ConfigError, check_config
from rankstudy.pipeline.jobs import job_logging, out_of_memory

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture
def config():
    return yaml.safe_load((REPO / "config/config.yaml").read_text())


def split(labels, n_features=2, qid0=0) -> RankData:
    labels = np.asarray(labels, dtype=float)
    n = len(labels)
    return RankData(X=np.ones((n, n_features)), y=labels, qid=np.repeat([qid0], n), docid=np.arange(n),
                    offsets=np.array([0, n]))


def test_every_label_zero_ends_at_the_cleaning_with_what_it_removed():
    fold = Fold({"train": split([0, 0, 0]), "vali": split([0, 0], qid0=1), "test": split([0, 0], qid0=2)}, 2.0)
    with pytest.raises(EmptySplitError, match=r"no query in the train split\(s\) .*'train.queries_without_relevant': 1"
                                              r".*label >= 1 \(evaluation.rel_threshold\)"):
        clean(fold, {"drop_no_relevant": ["train"]}, 1)


def test_a_training_split_narrower_than_vali_and_test_is_widened(tmp_path):
    """No n_features in the entry: each file's width is its largest feature index."""
    folder = tmp_path / "Toy" / "Fold1"
    folder.mkdir(parents=True)
    (folder / "train.txt").write_text("2 qid:1 1:0.5 3:0.1\n0 qid:1 1:0.2 2:0.3\n")
    for s, q in (("vali", 2), ("test", 3)):
        (folder / f"{s}.txt").write_text(f"1 qid:{q} 1:0.5 46:0.1\n0 qid:{q} 2:0.2\n")
    entry = datasets.validate_entry("Toy", {"source": "local", "labels": [0, 2], "folds": 1,
                                            "layout": "Fold{fold}/{split}.txt"})
    lines = []
    fold = load_fold("Toy", {"name": "Toy", "source": "local", "root": "Toy", "entry": entry}, 1,
                     progress=lines.append, data_root=tmp_path)
    assert {s: d.n_features for s, d in fold.splits.items()} == {"train": 46, "vali": 46, "test": 46}
    assert fold.splits["train"].X[0, :3].tolist() == [0.5, 0.0, 0.1] and not fold.splits["train"].X[:, 3:].any()
    assert any("widened to 46" in line for line in lines)


def test_second_order_features_of_a_very_wide_data_set_are_refused_before_any_job(config, tmp_path):
    (tmp_path / "wide.yaml").write_text(yaml.safe_dump({"Wide": {
        "source": "local", "labels": [0, 2], "folds": 1, "n_features": 100000, "layout": "{split}.txt"}}))
    (tmp_path / "data" / "Wide").mkdir(parents=True)
    for split in ("train", "vali", "test"):
        (tmp_path / "data" / "Wide" / f"{split}.txt").touch()
    config.update(datasets=["Wide"], folds=[1], registry_extra=str(tmp_path / "wide.yaml"),
                  data_root=str(tmp_path / "data"))
    with pytest.raises(ConfigError, match=r"features.rho: data set 'Wide' has 100000 features.*GiB.*rho: \[\]"):
        check_config(config, REPO)
    config["features"]["rho"] = []
    check_config(config, REPO)


def test_a_report_metric_the_evaluation_does_not_compute_is_refused(config):
    config["report"]["metrics"] = ["ndcg@10", "err", "ndcg@7"]
    config["evaluation"]["metrics"] = ["map"]
    with pytest.raises(ConfigError, match=r"report.metrics: err not computed.*add it to evaluation.metrics"):
        check_config(config, REPO)
    config["evaluation"]["metrics"] = ["map", "err"]  # ndcg@7 is always computed (the NDCG@k plot)
    check_config(config, REPO)


class FakeJob:
    def __init__(self, tmp_path):
        self.log, self.wildcards, self.threads = [str(tmp_path / "job.log")], {"fold": "1"}, 1


def test_a_folder_the_job_cannot_write_gets_one_line_saying_so(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(sys, "stderr", sys.stderr)
    with pytest.raises(SystemExit):
        with job_logging(FakeJob(tmp_path), "train"):
            raise PermissionError(errno.EACCES, "Permission denied", "results/runs/x/fold1/model.json")
    err = capsys.readouterr().err
    assert "rankstudy train: cannot write results/runs/x/fold1/model.json: permission denied" in err


@pytest.mark.parametrize("exc", [MemoryError(), OSError(errno.ENOMEM, "Cannot allocate memory"),
                                 RuntimeError("can't start new thread"),
                                 OSError("Could not find/load shared object file 'libllvmlite.so'")])
def test_running_out_of_memory_says_so(exc, tmp_path, capsys, monkeypatch):
    assert out_of_memory(exc)
    monkeypatch.setattr(sys, "stderr", sys.stderr)
    with pytest.raises(SystemExit):
        with job_logging(FakeJob(tmp_path), "train"):
            raise exc
    assert "rankstudy train: out of memory" in capsys.readouterr().err


def test_other_errors_keep_their_traceback(tmp_path, monkeypatch):
    monkeypatch.setattr(sys, "stderr", sys.stderr)
    with pytest.raises(RuntimeError, match="a bug"):
        with job_logging(FakeJob(tmp_path), "train"):
            raise RuntimeError("a bug")
