"""The data-set registry, split-file lookup, and ensure_available against a loopback HTTP server."""

from __future__ import annotations

import functools
import hashlib
import io
import tarfile
import zipfile
from http.server import SimpleHTTPRequestHandler
from pathlib import Path

import pytest
import yaml

from rankstudy.data import registry as datasets
from rankstudy.data.registry import DatasetNotFound, RegistryError
from rankstudy.data.download import DownloadError
from loopback import serving

EXPECTED_FEATURES = {
    "MQ2007": 46, "MQ2008": 46, "OHSUMED": 45,
    "TD2003": 64, "TD2004": 64, "HP2003": 64, "HP2004": 64, "NP2003": 64, "NP2004": 64,
    "MSLR-WEB10K": 136, "MSLR-WEB30K": 136, "Yahoo-Set1": 700, "Yahoo-Set2": 700,
    "Istella-S": 220, "Istella": 220,
}


@pytest.fixture(scope="module")
def registry(repo_root):
    return datasets.load_registry(repo_root / "config" / "datasets.yaml")


# ---------------------------------------------------------------------------
# registry


def test_default_path_is_the_repos_registry(repo_root):
    assert datasets.default_registry_path() == repo_root / "config" / "datasets.yaml"
    assert datasets.load_registry().keys() == datasets.load_registry(repo_root / "config" / "datasets.yaml").keys()


def test_registry_has_every_benchmark_with_required_fields(registry):
    assert registry["synthetic"]["source"] == "synthetic"
    for name, n_features in EXPECTED_FEATURES.items():
        entry = registry[name]
        assert entry["n_features"] == n_features, name
        assert entry["source"] in ("download", "manual"), name
        for key in ("url", "archive", "labels", "folds", "layout"):
            assert entry.get(key) is not None, (name, key)
        assert "sha256" in entry or "md5" in entry, name  # stated, possibly null = unknown
        assert entry["folds"] == (1 if name.startswith(("Yahoo", "Istella")) else 5), name
        if entry["source"] == "manual":
            assert entry["instructions"], name
    assert registry["MQ2008"]["labels"] == [0, 2]
    assert registry["MSLR-WEB10K"]["labels"] == [0, 4]
    assert registry["TD2003"]["split_names"]["train"] == "trainingset"


def _write_registry(tmp_path: Path, data: dict) -> Path:
    path = tmp_path / "datasets.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def test_registry_errors_name_file_dataset_and_key(tmp_path):
    good = {"source": "download", "url": "http://127.0.0.1/x.zip", "archive": "zip", "sha256": None,
            "n_features": 3, "labels": [0, 1], "folds": 2, "layout": "Fold{fold}/{split}.txt"}
    datasets.load_registry(_write_registry(tmp_path, {"toy": good}))
    cases = [
        ({k: v for k, v in good.items() if k != "layout"}, "layout"),
        ({**good, "labels": [2, 1]}, "labels"),
        ({**good, "layout": "{split}.txt"}, "layout"),  # 2 folds need {fold}
        ({**good, "layout": "Fold{fold}/{part}.txt"}, "layout"),
        ({**good, "sha256": "abc"}, "sha256"),
        ({**good, "source": "ftp"}, "source"),
        ({k: v for k, v in good.items() if k not in ("sha256",)}, "sha256"),
        ({**good, "source": "manual"}, "instructions"),
    ]
    for entry, key in cases:
        path = _write_registry(tmp_path, {"toy": entry})
        with pytest.raises(RegistryError) as err:
            datasets.load_registry(path)
        msg = str(err.value)
        assert str(path) in msg and "'toy'" in msg and f"'{key}'" in msg, (key, msg)
    with pytest.raises(RegistryError, match="not found"):
        datasets.load_registry(tmp_path / "nope.yaml")


def test_manual_entry_error_carries_instructions(registry, tmp_path):
    entry = registry["Yahoo-Set1"]
    with pytest.raises(DatasetNotFound) as err:
        datasets.ensure_available("Yahoo-Set1", entry, tmp_path / "data", tmp_path / "dl", progress=None)
    expected = " ".join(entry["instructions"].replace("{data_root}", str(tmp_path / "data")).split())
    assert expected in str(err.value)
    assert str(tmp_path / "data" / "Yahoo-Set1") in str(err.value)
    assert not (tmp_path / "dl").exists() and not (tmp_path / "data").exists()


def test_synthetic_has_no_files(registry, tmp_path):
    with pytest.raises(ValueError, match="synthetic"):
        datasets.ensure_available("synthetic", registry["synthetic"], tmp_path, tmp_path, progress=None)


# ---------------------------------------------------------------------------
# split_file


def test_split_file_finds_shared_mq2008(registry, shared_data):
    path = datasets.split_file("MQ2008", registry["MQ2008"], shared_data, 1, "train")
    assert path == shared_data / "MQ2008" / "Fold1" / "train.txt.gz"
    assert datasets.missing_splits("MQ2008", registry["MQ2008"], shared_data) == []


def test_split_file_txt_gz_and_split_names(registry, tmp_path):
    root = tmp_path / "data"
    (root / "MQ2007" / "Fold3").mkdir(parents=True)
    (root / "MQ2007" / "Fold3" / "vali.txt").write_text("0 qid:1 1:0\n")
    (root / "MQ2007" / "Fold3" / "vali.txt.gz").write_bytes(b"")  # plain file is preferred
    assert datasets.split_file("MQ2007", registry["MQ2007"], root, 3, "vali") == root / "MQ2007/Fold3/vali.txt"

    (root / "TD2003" / "Fold2").mkdir(parents=True)
    (root / "TD2003" / "Fold2" / "testset.txt.gz").write_bytes(b"")
    assert datasets.split_file("TD2003", registry["TD2003"], root, 2, "test") == root / "TD2003/Fold2/testset.txt.gz"
    (root / "Yahoo-Set2").mkdir()
    (root / "Yahoo-Set2" / "set2.valid.txt").write_text("")
    assert datasets.split_file("Yahoo-Set2", registry["Yahoo-Set2"], root, 1, "vali").name == "set2.valid.txt"


def test_split_file_not_found_names_paths_tried(registry, tmp_path):
    with pytest.raises(DatasetNotFound) as err:
        datasets.split_file("MQ2007", registry["MQ2007"], tmp_path, 1, "train")
    msg = str(err.value)
    assert str(tmp_path / "MQ2007" / "Fold1" / "train.txt") in msg
    assert str(tmp_path / "MQ2007" / "Fold1" / "train.txt.gz") in msg
    assert "ensure_available" in msg
    with pytest.raises(ValueError, match="folds 1..5"):
        datasets.split_file("MQ2007", registry["MQ2007"], tmp_path, 6, "train")
    with pytest.raises(ValueError, match="no split 'vali'"):
        datasets.split_file("Istella", registry["Istella"], tmp_path, 1, "vali")


# ---------------------------------------------------------------------------
# ensure_available, served from a loopback HTTP server


class QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture()
def file_server(tmp_path):
    """Serves tmp_path/www on 127.0.0.1 (random port); ``.hits`` counts GET requests."""
    www = tmp_path / "www"
    www.mkdir()
    hits = []

    class Counting(QuietHandler):
        def do_GET(self):
            hits.append(self.path)
            super().do_GET()

    with serving(functools.partial(Counting, directory=str(www))) as srv:
        srv.www, srv.hits = www, hits
        yield srv


def toy_files(prefix: str, folds: int = 2) -> dict[str, bytes]:
    return {
        f"{prefix}Fold{f}/{s}.txt": f"{f % 3} qid:{f} 1:0.5 2:0.25 # {s}\n".encode()
        for f in range(1, folds + 1) for s in ("train", "vali", "test")
    }


def make_zip(path: Path, files: dict[str, bytes]) -> str:
    with zipfile.ZipFile(path, "w") as zf:
        for name, data in files.items():
            zf.writestr(name, data)
    return hashlib.sha256(path.read_bytes()).hexdigest()


def toy_entry(url: str, **extra) -> dict:
    entry = {"source": "download", "url": url, "archive": "zip", "sha256": None, "n_features": 2,
             "labels": [0, 2], "folds": 2, "layout": "Fold{fold}/{split}.txt", **extra}
    return datasets.validate_entry("Toy", entry)


def test_ensure_available_downloads_verifies_and_unpacks(file_server, tmp_path):
    files = toy_files("Toy/")  # archive holds a top folder, as MQ2007.rar does
    sha = make_zip(file_server.www / "Toy.zip", files)
    entry = toy_entry(file_server.url("Toy.zip"), sha256=sha)
    data_root, dl = tmp_path / "data", tmp_path / "dl"
    lines = []
    folder = datasets.ensure_available("Toy", entry, data_root, dl, progress=lines.append)
    assert folder == data_root / "Toy"
    for name, data in files.items():
        assert (data_root / name).read_bytes() == data
    assert sorted(p.name for p in data_root.iterdir()) == ["Toy"]  # temp folder removed
    assert (dl / "Toy.zip").is_file()
    assert any("ready" in line for line in lines)
    # second call: files are there, nothing is fetched again
    n = len(file_server.hits)
    assert datasets.ensure_available("Toy", entry, data_root, dl, progress=None) == folder
    assert len(file_server.hits) == n


def test_ensure_available_mirror_and_archive_subdir(file_server, tmp_path):
    # One archive holding two data sets (like LETOR 3.0 Gov.rar), served as tar.gz from a mirror.
    files = {**toy_files("Gov/QueryLevelNorm/2003_td_dataset/"), **toy_files("Gov/QueryLevelNorm/2004_td_dataset/")}
    with tarfile.open(file_server.www / "Gov.tar.gz", "w:gz") as tf:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    entry = toy_entry(file_server.url("gone/Gov.tar.gz"), archive="tar.gz",
                      mirrors=[file_server.url("Gov.tar.gz")], archive_subdir="**/2004_td_dataset")
    folder = datasets.ensure_available("TD", entry, tmp_path / "data", tmp_path / "dl", progress=None)
    assert (folder / "Fold2" / "vali.txt").read_bytes() == files["Gov/QueryLevelNorm/2004_td_dataset/Fold2/vali.txt"]
    assert "/gone/Gov.tar.gz" in file_server.hits  # primary URL was tried first (404)
    # without archive_subdir the two candidate folders are ambiguous: a clear error, nothing left
    entry2 = toy_entry(file_server.url("Gov.tar.gz"), archive="tar.gz")
    with pytest.raises(DatasetNotFound, match="archive_subdir"):
        datasets.ensure_available("TD2", entry2, tmp_path / "data", tmp_path / "dl", progress=None)
    assert sorted(p.name for p in (tmp_path / "data").iterdir()) == ["TD"]


def test_ensure_available_bad_checksum_leaves_nothing(file_server, tmp_path):
    make_zip(file_server.www / "Toy.zip", toy_files(""))
    entry = toy_entry(file_server.url("Toy.zip"), sha256="1" * 64)
    with pytest.raises(DownloadError) as err:
        datasets.ensure_available("Toy", entry, tmp_path / "data", tmp_path / "dl", progress=None)
    assert "checksum mismatch" in str(err.value) and "save it as" in str(err.value)
    assert not (tmp_path / "data" / "Toy").exists()
    assert list((tmp_path / "dl").iterdir()) == []


def test_ensure_available_never_touches_an_incomplete_folder(file_server, tmp_path):
    make_zip(file_server.www / "Toy.zip", toy_files(""))
    entry = toy_entry(file_server.url("Toy.zip"))
    (tmp_path / "data" / "Toy" / "Fold1").mkdir(parents=True)
    (tmp_path / "data" / "Toy" / "Fold1" / "train.txt").write_text("mine\n")
    with pytest.raises(DatasetNotFound, match="lacks 5 split file"):
        datasets.ensure_available("Toy", entry, tmp_path / "data", tmp_path / "dl", progress=None)
    assert (tmp_path / "data" / "Toy" / "Fold1" / "train.txt").read_text() == "mine\n"
    assert file_server.hits == []


def test_missing_splits_of_requested_folds_only(tmp_path):
    entry = {"folds": 5, "layout": "Fold{fold}/{split}.txt", "splits": ["train", "vali", "test"]}
    for split in ("train", "vali", "test"):
        (tmp_path / "X" / "Fold3").mkdir(parents=True, exist_ok=True)
        (tmp_path / "X" / "Fold3" / f"{split}.txt").write_text("0 qid:1 1:0\n")
    assert datasets.missing_splits("X", entry, tmp_path, folds=[3]) == []
    assert len(datasets.missing_splits("X", entry, tmp_path)) == 12
