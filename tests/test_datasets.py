"""The data-set registry, split-file lookup, and ensure_available against a loopback HTTP server."""

from __future__ import annotations

import functools
import gzip
import hashlib
import io
import json
import re
import tarfile
import zipfile
from http.server import SimpleHTTPRequestHandler
from pathlib import Path

import pytest
import yaml

from rankstudy.data import registry as datasets
from rankstudy.data.folds import load_fold
from rankstudy.data.letor import LetorFormatError
from rankstudy.data import sources, splitfiles
from rankstudy.data.registry import RegistryError
from rankstudy.data.splitfiles import DatasetNotFound
from rankstudy.data.download import ArchiveError, ChecksumError, DownloadError
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
        ({**good, "labels": [-1, 2]}, "labels"),  # graded relevance: no negative labels
        ({**good, "labels": [0, 1.5]}, "labels"),
        ({**good, "files_sha256": {"Fold1/train.txt": "abc"}}, "files_sha256"),
        ({**good, "files_sha256": {"Fold3/train.txt": "a" * 64}}, "files_sha256"),  # only 2 folds
        ({**good, "files_sha256": {"/etc/passwd": "a" * 64}}, "files_sha256"),
        ({**good, "folder": "/elsewhere"}, "folder"),  # absolute: for local entries only
        ({**good, "folder": "../elsewhere"}, "folder"),  # outside data_root
        ({"source": "local", "folds": 1, "layout": "{split}.txt"}, "labels"),
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
        sources.ensure_available("Yahoo-Set1", entry, tmp_path / "data", tmp_path / "dl", progress=None)
    expected = " ".join(entry["instructions"].replace("{data_root}", str(tmp_path / "data")).split())
    assert expected in str(err.value)
    assert str(tmp_path / "data" / "Yahoo-Set1") in str(err.value)
    assert not (tmp_path / "dl").exists() and not (tmp_path / "data").exists()


def test_synthetic_has_no_files(registry, tmp_path):
    with pytest.raises(ValueError, match="synthetic"):
        sources.ensure_available("synthetic", registry["synthetic"], tmp_path, tmp_path, progress=None)


def test_a_new_source_is_one_class_and_its_entry(monkeypatch, tmp_path):
    """The registry check, the fetch job's record and the fold reader all ask the source: a
    source registered in SOURCES alone is checked, fetched and read."""
    from rankstudy.data import synthetic
    from rankstudy.data.folds import load_fold

    class Tiny(sources.Source):
        name, required = "tiny", ("folds", "n_queries")

        def settings(self, entry, config):
            return {"source": self.name, "seed": config.get("seed", 0), "n_queries": entry["n_queries"]}

        def fetch(self, name, settings, data_root, folds, progress):
            return {"name": name, **settings}

        def read_fold(self, name, record, fold, data_root, progress):
            parts = synthetic.make_parts(seed=record["seed"], n_queries=record["n_queries"])
            return {"train": parts[0], "vali": parts[1], "test": parts[2]}, 4, {}

    monkeypatch.setitem(sources.SOURCES, "tiny", Tiny())
    with pytest.raises(RegistryError, match="'n_queries': required for source 'tiny'"):
        datasets.validate_entry("T", {"source": "tiny", "folds": 1})
    entry = datasets.validate_entry("T", {"source": "tiny", "folds": 1, "n_queries": 25})
    record = sources.fetch("T", sources.source_settings(entry, {"seed": 3}), tmp_path, [1], progress=None)
    assert record == {"name": "T", "source": "tiny", "seed": 3, "n_queries": 25}
    fold = load_fold("T", record, 1, progress=None, data_root=tmp_path)
    assert fold.kind == "letor" and fold.max_label == 4 and 0 < fold.splits["train"].n_queries < 25
    assert sources.data_kind(entry) == "letor" and sources.generator_settings(entry, {}) is None


# ---------------------------------------------------------------------------
# split_file


def test_split_file_finds_shared_mq2008(registry, shared_data):
    path = splitfiles.split_file("MQ2008", registry["MQ2008"], shared_data, 1, "train")
    assert path == shared_data / "MQ2008" / "Fold1" / "train.txt.gz"
    assert splitfiles.missing_splits("MQ2008", registry["MQ2008"], shared_data) == []


def test_split_file_txt_gz_and_split_names(registry, tmp_path):
    root = tmp_path / "data"
    (root / "MQ2007" / "Fold3").mkdir(parents=True)
    (root / "MQ2007" / "Fold3" / "vali.txt").write_text("0 qid:1 1:0\n")
    (root / "MQ2007" / "Fold3" / "vali.txt.gz").write_bytes(b"")  # plain file is preferred
    assert splitfiles.split_file("MQ2007", registry["MQ2007"], root, 3, "vali") == root / "MQ2007/Fold3/vali.txt"

    (root / "TD2003" / "Fold2").mkdir(parents=True)
    (root / "TD2003" / "Fold2" / "testset.txt.gz").write_bytes(b"")
    assert splitfiles.split_file("TD2003", registry["TD2003"], root, 2, "test") == root / "TD2003/Fold2/testset.txt.gz"
    (root / "Yahoo-Set2").mkdir()
    (root / "Yahoo-Set2" / "set2.valid.txt").write_text("")
    assert splitfiles.split_file("Yahoo-Set2", registry["Yahoo-Set2"], root, 1, "vali").name == "set2.valid.txt"


def test_split_file_not_found_names_paths_tried(registry, tmp_path):
    with pytest.raises(DatasetNotFound) as err:
        sources.source_of(registry["MQ2007"]).split_file("MQ2007", registry["MQ2007"], tmp_path, 1, "train")
    msg = str(err.value)
    assert str(tmp_path / "MQ2007" / "Fold1" / "train.txt") in msg
    assert str(tmp_path / "MQ2007" / "Fold1" / "train.txt.gz") in msg
    assert "ensure_available" in msg
    with pytest.raises(ValueError, match="folds 1..5"):
        splitfiles.split_file("MQ2007", registry["MQ2007"], tmp_path, 6, "train")
    with pytest.raises(ValueError, match="no split 'vali'"):
        splitfiles.split_file("Istella", registry["Istella"], tmp_path, 1, "vali")


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
    folder = sources.ensure_available("Toy", entry, data_root, dl, progress=lines.append)
    assert folder == data_root / "Toy"
    for name, data in files.items():
        assert (data_root / name).read_bytes() == data
    assert sorted(p.name for p in data_root.iterdir()) == ["Toy"]  # temp folder removed
    assert (dl / "Toy.zip").is_file()
    assert any("ready" in line for line in lines)
    # second call: files are there, nothing is fetched again
    n = len(file_server.hits)
    assert sources.ensure_available("Toy", entry, data_root, dl, progress=None) == folder
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
    folder = sources.ensure_available("TD", entry, tmp_path / "data", tmp_path / "dl", progress=None)
    assert (folder / "Fold2" / "vali.txt").read_bytes() == files["Gov/QueryLevelNorm/2004_td_dataset/Fold2/vali.txt"]
    assert "/gone/Gov.tar.gz" in file_server.hits  # primary URL was tried first (404)
    # without archive_subdir the two candidate folders are ambiguous: a clear error, nothing left
    entry2 = toy_entry(file_server.url("Gov.tar.gz"), archive="tar.gz")
    with pytest.raises(DatasetNotFound, match="archive_subdir"):
        sources.ensure_available("TD2", entry2, tmp_path / "data", tmp_path / "dl", progress=None)
    assert sorted(p.name for p in (tmp_path / "data").iterdir()) == ["TD"]


BROKEN = re.compile(r"^Toy\.zip\.broken-\d{8}T\d{6}Z(-\d+)?$")


def test_ensure_available_bad_checksum_quarantines_and_leaves_nothing(file_server, tmp_path):
    sha = make_zip(file_server.www / "Toy.zip", toy_files(""))
    entry = toy_entry(file_server.url("Toy.zip"), sha256="1" * 64)
    with pytest.raises(DownloadError) as err:
        sources.ensure_available("Toy", entry, tmp_path / "data", tmp_path / "dl", progress=None)
    msg = str(err.value)
    assert "checksum mismatch for Toy.zip" in msg and "1" * 64 in msg and sha in msg and "save it as" in msg
    assert not (tmp_path / "data" / "Toy").exists()
    [moved] = list((tmp_path / "dl").iterdir())  # the bad download, moved aside; no .part
    assert BROKEN.match(moved.name) and moved.name in msg


def _serve_toy(file_server, data: bytes) -> None:
    (file_server.www / "Toy.zip").write_bytes(data)


@pytest.mark.parametrize("via", ["http", "file"])
def test_damaged_archive_without_checksum_is_moved_aside_and_a_retry_downloads_again(file_server, tmp_path, via):
    """An archive that does not unpack (here: truncated upstream) is never reused: it is moved
    aside with a timestamp and the message says what to do; the next run downloads anew."""
    files = toy_files("")
    good = tmp_path / "good.zip"
    make_zip(good, files)
    _serve_toy(file_server, good.read_bytes()[:150])
    url = file_server.url("Toy.zip") if via == "http" else (file_server.www / "Toy.zip").as_uri()
    entry = toy_entry(url)  # sha256: null, as for MQ2008
    data_root, dl = tmp_path / "data", tmp_path / "dl"
    with pytest.raises(ArchiveError) as err:
        sources.ensure_available("Toy", entry, data_root, dl, progress=None)
    msg = str(err.value)
    [moved] = list(dl.iterdir())
    assert BROKEN.match(moved.name) and moved.read_bytes() == good.read_bytes()[:150]
    assert "damaged" in msg and "cannot be unpacked" in msg and str(moved) in msg and "Run again" in msg
    assert "states no checksum" in msg and url in msg and "\n" not in msg
    assert not (data_root / "Toy").exists() and [p.name for p in data_root.iterdir()] == []  # no temp folder
    # fixed upstream: the retry downloads again instead of reusing the bad copy
    _serve_toy(file_server, good.read_bytes())
    hits = len(file_server.hits)
    folder = sources.ensure_available("Toy", entry, data_root, dl, progress=None)
    assert (folder / "Fold2" / "vali.txt").read_bytes() == files["Fold2/vali.txt"]
    assert via == "file" or len(file_server.hits) == hits + 1


def test_corrupted_gzip_download_is_an_archive_error_not_a_zlib_traceback(file_server, tmp_path):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tf:
        for name, data in toy_files("").items():
            info = tarfile.TarInfo(name)
            info.size = len(data * 300)
            tf.addfile(info, io.BytesIO(data * 300))
    data = bytearray(buf.getvalue())
    for k in range(40, len(data) - 20, 7):
        data[k] ^= 0x55
    (file_server.www / "Toy.tar.gz").write_bytes(bytes(data))
    entry = toy_entry((file_server.www / "Toy.tar.gz").as_uri(), archive="tar.gz")
    with pytest.raises(ArchiveError, match="corrupted compressed data.*moved aside"):
        sources.ensure_available("Toy", entry, tmp_path / "data", tmp_path / "dl", progress=None)
    assert [p.name.split(".broken-")[0] for p in (tmp_path / "dl").iterdir()] == ["Toy.tar.gz"]


def _files_sha256(files: dict[str, bytes]) -> dict[str, str]:
    return {name: hashlib.sha256(data).hexdigest() for name, data in files.items()}


def test_archive_without_checksum_is_verified_by_its_files(file_server, tmp_path):
    files = toy_files("")
    make_zip(file_server.www / "Toy.zip", files)
    lines = []
    entry = toy_entry(file_server.url("Toy.zip"), files_sha256=_files_sha256(files))
    sources.ensure_available("Toy", entry, tmp_path / "data", tmp_path / "dl", progress=lines.append)
    assert any("6 file(s) of the archive verified" in line for line in lines)
    # one file differs from the registry's digest: the archive is moved aside, nothing unpacked is kept
    wrong = {**_files_sha256(files), "Fold2/test.txt": "2" * 64}
    entry = toy_entry(file_server.url("Toy.zip"), files_sha256=wrong)
    with pytest.raises(ArchiveError) as err:
        sources.ensure_available("Toy2", entry, tmp_path / "data2", tmp_path / "dl2", progress=None)
    msg = str(err.value)
    assert "Fold2/test.txt" in msg and "2" * 64 in msg and hashlib.sha256(files["Fold2/test.txt"]).hexdigest() in msg
    assert "moved aside" in msg and [p.name for p in (tmp_path / "data2").iterdir()] == []
    assert [p.name.split(".broken-")[0] for p in (tmp_path / "dl2").iterdir()] == ["Toy.zip"]


def test_shipped_checksums_verify_the_shared_mq2008_files(registry, shared_data):
    entry = registry["MQ2008"]
    assert len(entry["files_sha256"]) == 15
    for fold in range(1, 6):
        for split in ("train", "vali", "test"):
            path = splitfiles.split_file("MQ2008", entry, shared_data, fold, split)
            assert splitfiles.verify_split_file("MQ2008", entry, path, fold, split)


def test_download_verification_is_the_rule(registry):
    """Every downloadable entry states a checksum of its archive or of its files, except those
    whose upstream publishes none (LETOR 3.0: nothing is invented)."""
    unverified = sorted(n for n, e in registry.items() if e["source"] == "download"
                        and not (e.get("sha256") or e.get("md5") or e.get("files_sha256")))
    assert unverified == ["HP2003", "HP2004", "NP2003", "NP2004", "TD2003", "TD2004"]
    assert len(registry["MSLR-WEB30K"]["files_sha256"]) == 15 and len(registry["Istella"]["files_sha256"]) == 2


def test_verify_split_file_takes_gzip_and_crlf_and_names_both_digests(tmp_path):
    text = b"1 qid:1 1:0.5 2:0.25\n0 qid:1 1:0.1 2:0.0\n"
    entry = toy_entry("http://127.0.0.1/x.zip", files_sha256={"Fold1/train.txt": hashlib.sha256(text).hexdigest()})
    for data in (text, gzip.compress(text), text.replace(b"\n", b"\r\n")):
        (tmp_path / "f").write_bytes(data)
        assert splitfiles.verify_split_file("Toy", entry, tmp_path / "f", 1, "train")
    assert not splitfiles.verify_split_file("Toy", entry, tmp_path / "f", 1, "vali")  # no digest stated
    (tmp_path / "f").write_bytes(text + b"0 qid:2 1:0\n")
    with pytest.raises(ChecksumError) as err:
        splitfiles.verify_split_file("Toy", entry, tmp_path / "f", 1, "train", shown="{data_root}/Toy/Fold1/train.txt")
    msg = str(err.value)
    assert msg.startswith("{data_root}/Toy/Fold1/train.txt: checksum mismatch for Fold1/train.txt of data set 'Toy'")
    assert hashlib.sha256(text).hexdigest() in msg and hashlib.sha256(text + b"0 qid:2 1:0\n").hexdigest() in msg
    assert "registry_extra" in msg
    damaged = bytearray(gzip.compress(text * 2000))
    for k in range(30, len(damaged) - 20, 5):
        damaged[k] ^= 0x55
    (tmp_path / "f").write_bytes(bytes(damaged))
    with pytest.raises(ChecksumError, match=r"^shown: cannot be read to check its checksum: damaged gzip file "
                                            r"\(corrupted compressed data.*intact copy$"):
        splitfiles.verify_split_file("Toy", entry, tmp_path / "f", 1, "train", shown="shown")


def test_ensure_available_never_touches_an_incomplete_folder(file_server, tmp_path):
    make_zip(file_server.www / "Toy.zip", toy_files(""))
    entry = toy_entry(file_server.url("Toy.zip"))
    (tmp_path / "data" / "Toy" / "Fold1").mkdir(parents=True)
    (tmp_path / "data" / "Toy" / "Fold1" / "train.txt").write_text("mine\n")
    with pytest.raises(DatasetNotFound, match="lacks 5 split file"):
        sources.ensure_available("Toy", entry, tmp_path / "data", tmp_path / "dl", progress=None)
    assert (tmp_path / "data" / "Toy" / "Fold1" / "train.txt").read_text() == "mine\n"
    assert file_server.hits == []


def test_missing_splits_of_requested_folds_only(tmp_path):
    entry = {"folds": 5, "layout": "Fold{fold}/{split}.txt", "splits": ["train", "vali", "test"]}
    for split in ("train", "vali", "test"):
        (tmp_path / "X" / "Fold3").mkdir(parents=True, exist_ok=True)
        (tmp_path / "X" / "Fold3" / f"{split}.txt").write_text("0 qid:1 1:0\n")
    assert splitfiles.missing_splits("X", entry, tmp_path, folds=[3]) == []
    assert len(splitfiles.missing_splits("X", entry, tmp_path)) == 12


# ---------------------------------------------------------------------------
# a user's own data set: a `local` entry in a registry file merged over the shipped one


def write_letor_folds(folder: Path, folds: int = 2, label: str = "1") -> None:
    for f in range(1, folds + 1):
        (folder / f"Fold{f}").mkdir(parents=True, exist_ok=True)
        for k, s in enumerate(("train", "vali", "test")):
            q = 10 * f + k
            (folder / f"Fold{f}" / f"{s}.txt").write_text(
                f"2 qid:{q} 1:0.5 2:0.25\n{label} qid:{q} 1:0.1 2:0.7\n0 qid:{q} 1:0.3 3:0.1\n")


MINE = {"source": "local", "labels": [0, 2], "folds": 2, "layout": "Fold{fold}/{split}.txt"}


def test_registry_extra_adds_and_replaces_entries(registry, repo_root, tmp_path):
    extra = _write_registry(tmp_path, {"MyData": MINE, "MQ2008": {**MINE, "folder": "my-mq"}})
    merged = datasets.load_registries([repo_root / "config" / "datasets.yaml", extra])
    assert merged.keys() == registry.keys() | {"MyData"}
    assert merged["MQ2008"]["source"] == "local" and "files_sha256" not in merged["MQ2008"]  # replaced whole
    assert merged["MQ2007"] == registry["MQ2007"]


def test_local_entry_reads_a_folder_of_its_own_and_never_downloads(tmp_path):
    entry = datasets.validate_entry("MyData", {**MINE, "folder": "somewhere/mine"})
    data_root = tmp_path / "data"
    with pytest.raises(DatasetNotFound) as err:
        sources.ensure_available("MyData", entry, data_root, data_root / "_downloads", progress=None)
    msg = str(err.value)
    assert "your own" in msg and str(data_root / "somewhere/mine") in msg and "never downloaded" in msg
    assert not data_root.exists()
    write_letor_folds(data_root / "somewhere" / "mine")
    folder = sources.ensure_available("MyData", entry, data_root, data_root / "_downloads", progress=None)
    assert folder == data_root / "somewhere" / "mine" and not (data_root / "_downloads").exists()


def test_load_fold_of_a_local_entry_records_paths_relative_to_data_root(tmp_path):
    entry = datasets.validate_entry("MyData", {**MINE, "n_features": 3})
    data_root = tmp_path / "data"
    write_letor_folds(data_root / "MyData")
    lines = []
    fold = load_fold("MyData", {"source": "local", "entry": entry}, 2, progress=lines.append, data_root=data_root)
    assert fold.files == {s: f"MyData/Fold2/{s}.txt" for s in ("train", "vali", "test")}
    assert fold.max_label == 2 and fold.splits["test"].n_queries == 1
    # an absolute data_root is shown as {data_root} in what a job prints
    assert lines == [f"parsing {{data_root}}/MyData/Fold2/{s}.txt" for s in ("train", "vali", "test")]
    assert str(tmp_path) not in json.dumps(fold.files) + " ".join(lines)


def test_load_fold_checks_the_registry_checksums(tmp_path):
    data_root = tmp_path / "data"
    write_letor_folds(data_root / "MyData")
    digest = hashlib.sha256((data_root / "MyData/Fold1/train.txt").read_bytes()).hexdigest()
    entry = datasets.validate_entry("MyData", {**MINE, "files_sha256": {"Fold1/train.txt": digest,
                                                                        "Fold1/test.txt": "3" * 64}})
    lines = []
    with pytest.raises(ChecksumError) as err:
        load_fold("MyData", {"source": "local", "entry": entry}, 1, progress=lines.append, data_root=data_root)
    assert "{data_root}/MyData/Fold1/train.txt: sha256 verified" in lines
    assert str(err.value).startswith("{data_root}/MyData/Fold1/test.txt: checksum mismatch") and "3" * 64 in str(err.value)
    assert (data_root / "MyData/Fold1/test.txt").exists()  # a user's file is never moved


@pytest.mark.parametrize("label, problem", [
    ("1.5", "label 1.5 is not an integer; this data set's labels are the integers 0..2"),
    ("-1", "label -1 is outside this data set's label range 0..2"),
    ("3", "label 3 is outside this data set's label range 0..2"),
])
def test_load_fold_rejects_labels_outside_the_registry_range_with_file_and_line(tmp_path, label, problem):
    data_root = tmp_path / "data"
    write_letor_folds(data_root / "MyData", label=label)
    entry = datasets.validate_entry("MyData", MINE)
    with pytest.raises(LetorFormatError) as err:
        load_fold("MyData", {"source": "local", "entry": entry}, 1, progress=lambda _: None, data_root=data_root)
    assert str(err.value).startswith(f"{{data_root}}/MyData/Fold1/train.txt:2: {problem}"), str(err.value)


def test_load_fold_with_a_relative_data_root_shows_paths_from_the_project(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write_letor_folds(Path("data") / "MyData", label="7")
    entry = datasets.validate_entry("MyData", MINE)
    with pytest.raises(LetorFormatError, match=r"^data/MyData/Fold1/train\.txt:2: label 7 is outside"):
        load_fold("MyData", {"source": "local", "entry": entry}, 1, progress=lambda _: None, data_root="data")


@pytest.mark.parametrize("name", ["OHSUMED", "OHSUMED-Feature-min"])
def test_ohsumed_is_found_under_data_root_and_every_file_verified(name, shared_data):
    """The seeds' data, LETOR 3.0 OHSUMED, read as MQ2008 is: from {data_root}/OHSUMED, each of the
    15 split files checked against the registry's sha256 (Feature-min's copies named train/vali/test)."""
    entry = datasets.load_registry()[name]
    if not (shared_data / entry.get("folder", name)).exists():
        pytest.skip(f"{name} not under {shared_data}")
    assert splitfiles.missing_splits(name, entry, shared_data) == []
    for fold in range(1, 6):
        for split in ("train", "vali", "test"):
            path = splitfiles.split_file(name, entry, shared_data, fold, split)
            assert splitfiles.verify_split_file(name, entry, path, fold, split), path
