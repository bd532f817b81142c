"""Paths stay where they belong: every data set file resolves inside data_root (or inside a
`local` entry's own absolute folder) after symlinks and '..', for every source, through one
check (rankstudy.data.splitfiles.inside_data); no error echoes the content of a file that is not
what it should be; every name that becomes a path under results/ is a plain name."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from rankstudy.data import registry as datasets
from rankstudy.data import sources
from rankstudy.data.folds import load_fold
from rankstudy.data.letor import LetorFormatError
from rankstudy.data.qa_table import QATableError, load_qa_table
from rankstudy.data.registry import RegistryError
from rankstudy.data.splitfiles import DataPathError, inside_data, split_file
from rankstudy.pipeline.config import ConfigError, check_config, check_local_files
from rankstudy.pipeline.errors import user_errors

REPO = Path(__file__).resolve().parents[1]
PASSWD_LINE = "root:x:0:0:root:/root:/bin/bash"
SPLITS = ("train", "vali", "test")


@pytest.fixture
def config():
    return yaml.safe_load((REPO / "config/config.yaml").read_text())


def letor_files(folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for q, split in enumerate(SPLITS):
        (folder / f"{split}.txt").write_text(f"1 qid:{q} 1:0.5 2:0.1\n0 qid:{q} 1:0.2 2:0.3\n")


def use_entry(config: dict, tmp_path: Path, entry: dict, data_root: Path) -> dict:
    (tmp_path / "extra.yaml").write_text(yaml.safe_dump({"Mine": entry}))
    config.update(datasets=["Mine"], folds=[1], registry_extra=str(tmp_path / "extra.yaml"), data_root=str(data_root))
    return config


LOCAL = {"source": "local", "labels": [0, 2], "folds": 1, "layout": "{split}.txt"}


def test_a_local_folder_outside_data_root_is_refused_before_any_job(config, tmp_path):
    letor_files(tmp_path / "outside")
    (tmp_path / "data").mkdir()
    use_entry(config, tmp_path, {**LOCAL, "folder": "../outside"}, tmp_path / "data")
    with pytest.raises(ConfigError, match=r"config key datasets: data set 'Mine': .*outside data_root .*"
                                          r"registry entry's folder"):
        check_config(config, REPO)


def test_a_data_set_folder_that_is_a_symlink_out_of_data_root_is_refused(config, tmp_path):
    letor_files(tmp_path / "elsewhere")
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "Mine").symlink_to(tmp_path / "elsewhere")
    use_entry(config, tmp_path, LOCAL, tmp_path / "data")
    with pytest.raises(ConfigError, match=r"resolves to .*elsewhere, outside data_root"):
        check_config(config, REPO)
    # the job refuses it too, should the data change after the check
    entry = datasets.validate_entry("Mine", LOCAL)
    with pytest.raises(DataPathError):
        load_fold("Mine", {"name": "Mine", "source": "local", "root": "Mine", "entry": entry}, 1,
                  progress=lambda _: None, data_root=tmp_path / "data")


def test_a_split_file_that_is_a_symlink_out_of_the_folder_is_refused(config, tmp_path):
    letor_files(tmp_path / "data" / "Mine")
    (tmp_path / "secret.txt").write_text(PASSWD_LINE + "\n")
    (tmp_path / "data" / "Mine" / "train.txt").unlink()
    (tmp_path / "data" / "Mine" / "train.txt").symlink_to(tmp_path / "secret.txt")
    use_entry(config, tmp_path, LOCAL, tmp_path / "data")
    with pytest.raises(ConfigError, match=r"train.txt resolves to .*secret.txt, outside data_root.*layout or split_names"):
        check_config(config, REPO)


def test_a_data_root_that_is_itself_a_symlink_is_fine(config, tmp_path):
    letor_files(tmp_path / "real" / "Mine")
    (tmp_path / "data").symlink_to(tmp_path / "real")
    use_entry(config, tmp_path, LOCAL, tmp_path / "data")
    check_config(config, REPO)


def test_split_names_that_climb_out_are_refused_by_the_registry_and_by_the_one_check(tmp_path):
    entry = {**LOCAL, "layout": "{split}", "split_names": {"train": "../../../../etc/passwd"}}
    with pytest.raises(RegistryError, match=r"Mine.*split_names.*no '\.\.'"):
        datasets.validate_entry("Mine", entry)
    # the registry is a first check of the form; the containment check holds without it
    (tmp_path / "data" / "Mine").mkdir(parents=True)
    (tmp_path / "passwd").write_text(PASSWD_LINE + "\n")
    climbing = {**entry, "split_names": {"train": "../../passwd"}}
    with pytest.raises(DataPathError, match=r"outside data_root"):
        split_file("Mine", climbing, tmp_path / "data", 1, "train")


def test_an_absolute_local_folder_is_its_own_boundary_and_a_wrong_file_is_not_echoed(config, tmp_path):
    """`folder: /etc` with `split_names: {train: passwd}`: the folder is the user's to name, but
    the file is no LETOR file, and the error names the file and line without its content."""
    etc = tmp_path / "etc"
    letor_files(etc)
    (etc / "passwd").write_text(PASSWD_LINE + "\n")
    entry = {**LOCAL, "folder": str(etc), "split_names": {"train": "passwd"}, "layout": "{split}"}
    for split in ("vali", "test"):
        (etc / split).write_text((etc / f"{split}.txt").read_text())
    use_entry(config, tmp_path, entry, tmp_path / "data")
    check_config(config, REPO)  # inside its own absolute folder
    valid = datasets.validate_entry("Mine", entry)
    with pytest.raises(LetorFormatError) as failure:
        load_fold("Mine", {"name": "Mine", "source": "local", "root": str(etc), "entry": valid}, 1,
                  progress=lambda _: None, data_root=tmp_path / "data")
    message = str(failure.value)
    assert f"{etc / 'passwd'}:1: non-numeric label of {len(PASSWD_LINE)} characters" in message
    assert "root" not in message.replace(str(tmp_path), "")
    # a symlink out of the absolute folder is refused like one out of data_root
    (etc / "train").symlink_to(tmp_path / "elsewhere.txt")
    (tmp_path / "elsewhere.txt").write_text("1 qid:1 1:0.5\n")
    with pytest.raises(DataPathError, match=r"outside its absolute folder"):
        split_file("Mine", {**valid, "split_names": {}}, tmp_path / "data", 1, "train")


def test_a_short_bad_field_is_still_shown(tmp_path):
    from rankstudy.data.letor import read_letor

    (tmp_path / "t.txt").write_text("x qid:1 1:0.5\n")
    with pytest.raises(LetorFormatError, match=r"t.txt:1: non-numeric label 'x'"):
        read_letor(tmp_path / "t.txt")


def test_a_qa_table_file_outside_data_root_is_refused(config, tmp_path):
    (tmp_path / "data" / "Mine").mkdir(parents=True)
    (tmp_path / "qa.tsv").write_text("question_id\tquestion\tanswer\tbest\n")
    entry = {"source": "qa_table", "file": "../../qa.tsv", "folds": 5, "instructions": "x"}
    use_entry(config, tmp_path, entry, tmp_path / "data")
    with pytest.raises(ConfigError, match=r"outside data_root.*registry entry's file"):
        check_local_files(config, {"Mine": datasets.validate_entry("Mine", entry)}, [1])  # a step of check_config
    record = {"name": "Mine", "source": "qa_table", "seed": 0, "file": "../qa.tsv", "vocabulary": 10}
    with pytest.raises(DataPathError):
        sources.read_fold("Mine", record, 1, tmp_path / "data", progress=lambda _: None)


def test_a_qa_table_that_is_another_file_does_not_echo_its_first_line(tmp_path):
    (tmp_path / "qa.csv").write_text(PASSWD_LINE + "\n" + "daemon:x:1:1:daemon:/usr/sbin:/usr/sbin/nologin\n")
    with pytest.raises(QATableError, match=r"qa.csv:1: missing column\(s\).*not shown") as failure:
        load_qa_table(tmp_path / "qa.csv")
    assert "root" not in str(failure.value).replace(str(tmp_path), "")


def test_the_path_error_ends_a_job_as_one_line():
    assert issubclass(DataPathError, user_errors())
    with pytest.raises(DataPathError):
        inside_data("Mine", {}, "/tmp/data", "/tmp/data/../x", "folder")


@pytest.mark.parametrize("key, value", [("study", ".."), ("study", "."), ("study", "a/b"), ("study", ".hidden"),
                                        ("datasets", "../x")])
def test_every_name_that_becomes_a_path_is_a_plain_name(config, key, value):
    config[key] = [value] if key == "datasets" else value
    with pytest.raises(ConfigError, match=rf"config key {key}: .* cannot name a folder under results/"):
        check_config(config, REPO)


def test_a_method_name_that_is_no_plain_name_is_refused(config):
    config["methods"]["../m"] = config["methods"].pop("ranknet")
    config["report"]["baseline"] = "pointwise"
    with pytest.raises(ConfigError, match=r"config key methods: '\.\./m' cannot name a folder"):
        check_config(config, REPO)
