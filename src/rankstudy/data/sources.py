"""Where a data set's splits come from: one class per ``source`` of a registry entry.

A source says what it needs of its registry entry, what kind of split it gives
(rankstudy.data.kinds), what the fetch job's record of it depends on, how the fetch job makes
it available, and how one fold's splits are read from that record. Everything else asks the
source (``source_of``); nothing else dispatches on the ``source`` name, so a new source is one
class here plus its entry in ``SOURCES``.

The fetch job's record (``results/data/{data}/source.json``) names files relative to
``data_root``, never one machine's absolute paths, and holds only what the source's
``settings`` gave it: moving the data folder, or changing the other generator's settings,
changes no record.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable
from pathlib import Path
from typing import ClassVar

import numpy as np

from rankstudy.data import synthetic
from rankstudy.data.install import install
from rankstudy.data.rotation import fold_parts, fold_splits
from rankstudy.data.splitfiles import SPLITS, DatasetNotFound, candidate_paths, dataset_dir, inside_data, \
    missing_splits, shown_path, split_file, verify_split_file
from rankstudy.util.names import lookup

__all__ = ["Source", "SOURCES", "source_of", "source_settings", "generator_settings", "data_kind", "fetch",
           "read_fold", "ensure_available", "carve_validation"]

Progress = Callable[[str], None]


def _relative_to_root(path: Path, data_root: Path) -> str:
    """``path`` relative to ``data_root`` when it is under it, as records write it."""
    try:
        return Path(os.path.abspath(path)).relative_to(os.path.abspath(data_root)).as_posix()
    except ValueError:  # a `local` entry's folder outside data_root: as the registry names it
        return str(path)


def carve_validation(train, seed: int, fraction: float = 0.2):
    """Hold out a seeded share of the training queries as the validation split."""
    vali = np.zeros(train.n_queries, dtype=bool)
    vali[np.random.default_rng(seed).permutation(train.n_queries)[: max(1, round(fraction * train.n_queries))]] = True
    return train.select_queries(~vali), train.select_queries(vali)


class Source:
    """One kind of source. ``read_fold`` gives ``(splits, max_label, files)``: the split name ->
    RankData or QAData, the top grade of the label scale (for ERR), and each split's file
    relative to data_root (empty for generated data)."""

    name: ClassVar[str]
    data_kind: ClassVar[str] = "letor"  # the kind of split it gives (rankstudy.data.kinds)
    required: ClassVar[tuple[str, ...]] = ("folds",)  # registry keys it cannot do without
    has_files: ClassVar[bool] = False  # split files under data_root, found by the entry's `layout`
    absolute_folder: ClassVar[bool] = False  # its `folder` may be an absolute path
    needs_checksum: ClassVar[bool] = False  # its entry must state an archive checksum (or null)
    present_before_run: ClassVar[bool] = False  # never fetched: its files must be there at the config check

    def settings(self, entry: dict, config: dict) -> dict:
        """What the fetch job's record depends on, and nothing else (its ``params``)."""
        raise NotImplementedError

    def generated(self, entry: dict, config: dict) -> dict | None:
        """A generated data set's settings (its content), or None for data read from files."""
        return None

    def width(self, entry: dict, config: dict) -> int | None:
        """The number of features, where it is known before any job."""
        return entry.get("n_features")

    def fetch(self, name: str, settings: dict, data_root: Path, folds: list[int], progress: Progress) -> dict:
        """Make the data set available (the fetch job) and return its record."""
        raise NotImplementedError

    def read_fold(self, name: str, record: dict, fold: int, data_root: Path, progress: Progress):
        raise NotImplementedError

    def ensure_available(self, name: str, entry: dict, data_root: str | os.PathLike, download_dir: str | os.PathLike,
                         progress: Progress | None = print, folds: list[int] | None = None) -> Path:
        raise ValueError(f"data set {name!r} is {self.name!r}: it has no split files to make available")

    def check_paths(self, name: str, entry: dict, data_root: str | os.PathLike, folds: list[int]) -> None:
        """Before any job: DataPathError (rankstudy.data.splitfiles.inside_data) if a folder or
        file of the data set that can be known now lies outside data_root. Generated data: none."""


class _Generated(Source):
    """An embedded generator: the config section named like the source, and the seed, are its content."""

    max_label: ClassVar[float]
    sizes: ClassVar[tuple[str, ...]]  # the section's keys the generator takes

    def settings(self, entry: dict, config: dict) -> dict:
        # the section's keys in the generator's order, whatever order the config files merged them
        # in: the fetch job's params, which Snakemake compares as text (config.yaml's order is this)
        section = config.get(self.name) or {}
        ordered = [*(k for k in self.sizes if k in section), *(k for k in section if k not in self.sizes)]
        return {"source": self.name, "seed": config.get("seed", 0), **{k: section[k] for k in ordered}}

    def generated(self, entry: dict, config: dict) -> dict:
        return self.settings(entry, config)

    def width(self, entry: dict, config: dict) -> int | None:
        return self.settings(entry, config).get("n_features")

    def fetch(self, name, settings, data_root, folds, progress):
        progress(f"data set {name}: embedded generator")
        return {"name": name, **settings}

    def read_fold(self, name, record, fold, data_root, progress):
        sizes = {k: record[k] for k in self.sizes if k in record}
        return fold_splits(self.make_parts(seed=record["seed"], **sizes), fold), self.max_label, {}

    def make_parts(self, seed: int, **sizes):
        raise NotImplementedError


class Synthetic(_Generated):
    name, max_label = "synthetic", 4
    sizes = ("n_queries", "n_features", "corrupt_share", "median_len", "min_len", "max_len")

    def make_parts(self, seed, **sizes):
        return synthetic.make_parts(seed=seed, **sizes)


class SyntheticQA(_Generated):
    name, data_kind, max_label = "synthetic_qa", "qa", 1
    sizes = ("n_questions", "vocab_size")

    def make_parts(self, seed, **sizes):
        from rankstudy.data import synthetic_qa  # here: its scipy.sparse is 0.4 s the Snakefile does not need

        return synthetic_qa.make_qa_parts(seed=seed, **sizes)


class QATable(Source):
    """A user's question-answer table: 5 parts by question (seeded), the fold's rotation, a
    bag-of-words fitted on the training part."""

    name, data_kind = "qa_table", "qa"
    required = ("folds", "file", "instructions")

    def settings(self, entry, config):
        return {"entry": entry, "seed": config.get("seed", 0)}  # the seed splits the table into parts

    def check_paths(self, name, entry, data_root, folds):
        self.table_file(name, entry, data_root, must_exist=False)

    def table_file(self, name: str, entry: dict, data_root: str | os.PathLike, must_exist: bool = True) -> Path:
        path = inside_data(name, entry, data_root, Path(data_root) / name / entry["file"], "file")
        if must_exist and not path.exists():
            raise DatasetNotFound(f"data set {name!r}: {path} not found. {entry['instructions']}")
        return path

    def fetch(self, name, settings, data_root, folds, progress):
        entry = settings["entry"]
        path = self.table_file(name, entry, data_root)
        progress(f"data set {name}: {shown_path(path, data_root)}")
        return {"name": name, "source": self.name, "seed": settings["seed"],
                "file": _relative_to_root(path, data_root), "vocabulary": entry.get("vocabulary", 3000),
                "root": _relative_to_root(path.parent, data_root), "paths": "relative to data_root"}

    def read_fold(self, name, record, fold, data_root, progress):
        # an absolute file (older source.json) stays as it is, if it is inside data_root
        import pandas as pd  # here, as qa_table: the Snakefile reads this module, and pandas is 0.5 s of imports

        from rankstudy.data import qa_table

        path = inside_data(name, {}, data_root, data_root / record["file"], "file")
        parts = qa_table.table_parts(qa_table.load_qa_table(path), seed=record["seed"])
        tables = {s: pd.concat([parts[k] for k in ks], ignore_index=True) for s, ks in fold_parts(fold).items()}
        words = qa_table.BagOfWords(k=record["vocabulary"]).fit_table(tables["train"])
        shown = _relative_to_root(path, data_root)
        return {s: words.transform(tables[s]) for s in SPLITS}, 1, {s: shown for s in SPLITS}


class _Files(Source):
    """LETOR files under data_root, found by the entry's ``layout``, checked as they are read:
    their content against ``files_sha256`` (when stated), their labels against ``labels`` and
    their feature indices against ``n_features``; every error names the file and line."""

    has_files = True

    def settings(self, entry, config):
        # the seed carves a validation split where there is none
        seeded = "vali" not in entry.get("splits", SPLITS)
        return {"entry": entry, **({"seed": config.get("seed", 0)} if seeded else {})}

    def what_to_do(self, name: str, entry: dict, data_root: Path) -> str:
        """What to do about missing files, for messages."""
        raise NotImplementedError

    def fetch_missing(self, name: str, entry: dict, data_root: Path, download_dir: Path,
                      missing: list[tuple[int, str]], progress: Progress | None) -> Path:
        """Put the ``missing`` (fold, split) files in place, or say what to do."""
        raise NotImplementedError

    def check_paths(self, name, entry, data_root, folds):
        dataset_dir(name, entry, data_root)
        for fold in folds:
            for split in entry.get("splits", SPLITS):
                with contextlib.suppress(DatasetNotFound):  # a missing file is the source's to report
                    split_file(name, entry, data_root, fold, split)

    def split_file(self, name: str, entry: dict, data_root: str | os.PathLike, fold: int, split: str) -> Path:
        """The file of ``split`` of ``fold``, or DatasetNotFound naming the paths tried and what to do."""
        return split_file(name, entry, data_root, fold, split, what_to_do=self.what_to_do(name, entry, Path(data_root)))

    def ensure_available(self, name, entry, data_root, download_dir, progress=print, folds=None):
        """Make sure the data set's folder holds every split file (of ``folds`` if given: a run
        of some folds needs only theirs); return that folder. Files already there are used as
        they are."""
        data_root, download_dir = Path(data_root), Path(download_dir)
        missing = missing_splits(name, entry, data_root, folds)
        if not missing:
            return dataset_dir(name, entry, data_root)
        return self.fetch_missing(name, entry, data_root, download_dir, missing, progress)

    def fetch(self, name, settings, data_root, folds, progress):
        entry = settings["entry"]
        root = self.ensure_available(name, entry, data_root, data_root / "_downloads", progress=progress, folds=folds)
        progress(f"data set {name}: {shown_path(root, data_root)}")
        return {"name": name, "source": entry["source"], "root": _relative_to_root(Path(root), data_root),
                "paths": "relative to data_root", "entry": entry,
                **({"seed": settings["seed"]} if "seed" in settings else {})}

    def read_fold(self, name, record, fold, data_root, progress):
        from rankstudy.data.letor import check_disjoint_queries, read_letor  # here: it imports pandas

        entry = record["entry"]
        present = [s for s in SPLITS if s in entry.get("splits", SPLITS)]
        files = {s: self.split_file(name, entry, data_root, fold, s) for s in present}
        shown = {s: shown_path(p, data_root) for s, p in files.items()}
        splits = {}
        for s in present:
            if verify_split_file(name, entry, files[s], fold, s, shown=shown[s]):
                progress(f"{shown[s]}: sha256 verified")
            progress(f"parsing {shown[s]}")
            splits[s] = read_letor(files[s], n_features=entry.get("n_features"), labels=entry.get("labels"),
                                   shown=shown[s])
        widths = {s: d.n_features for s, d in splits.items()}
        if len(set(widths.values())) > 1:  # no n_features: a sparse file's width is its largest index
            width = max(widths.values())
            progress(f"splits have {widths} features (largest index in each file): the narrower ones are "
                     f"widened to {width} with zeros, as absent features of a sparse LETOR line are")
            splits = {s: d.with_features(np.pad(d.X, ((0, 0), (0, width - d.n_features)))) if d.n_features < width
                      else d for s, d in splits.items()}
        if "vali" not in splits:  # e.g. the full Istella release
            splits["train"], splits["vali"] = carve_validation(splits["train"], seed=record.get("seed", 0))
            progress(f"no validation split: {splits['vali'].n_queries} training queries held out as vali")
        check_disjoint_queries({shown.get(s, f"{shown['train']} (held-out vali)"): splits[s] for s in SPLITS})
        return splits, entry["labels"][1], {s: _relative_to_root(p, data_root) for s, p in files.items()}


def _instructions(name: str, entry: dict, data_root: Path) -> str:
    text = str(entry.get("instructions") or f"get {name} from {entry.get('url')}")
    return " ".join(text.replace("{data_root}", str(data_root)).split())


class Download(_Files):
    """Downloaded from ``url`` (or a mirror) and unpacked into data_root by the fetch job."""

    name, needs_checksum = "download", True
    required = ("url", "archive", "n_features", "labels", "folds", "layout")

    def what_to_do(self, name, entry, data_root):
        return (f"fetch it with rankstudy.data.sources.ensure_available({name!r}, ...) (downloads {entry.get('url')}), "
                f"or put the files there by hand (layout {entry.get('layout')!r} under {data_root / name})")

    def fetch_missing(self, name, entry, data_root, download_dir, missing, progress):
        return install(name, entry, data_root, download_dir, missing, progress)


class Manual(_Files):
    """Files a user downloads by hand (a licence), following the entry's ``instructions``."""

    name, present_before_run = "manual", True
    required = ("n_features", "labels", "folds", "layout", "instructions")

    def what_to_do(self, name, entry, data_root):
        return _instructions(name, entry, data_root)

    def fetch_missing(self, name, entry, data_root, download_dir, missing, progress):
        raise DatasetNotFound(f"data set {name!r} must be downloaded by hand (licence). "
                              f"{_instructions(name, entry, data_root)}")


class Local(_Files):
    """A user's own files, in a folder under data_root or anywhere (an absolute ``folder``)."""

    name, absolute_folder, present_before_run = "local", True, True
    required = ("labels", "folds", "layout")

    def what_to_do(self, name, entry, data_root):
        hint = (f"data set {name!r} is your own (source 'local'): its files are read from "
                f"{dataset_dir(name, entry, data_root)} following layout {entry.get('layout')!r} (plain or .gz), "
                f"never downloaded; put them there, or correct data_root, 'folder' or 'layout'")
        return hint + (f". {_instructions(name, entry, data_root)}" if entry.get("instructions") else "")

    def fetch_missing(self, name, entry, data_root, download_dir, missing, progress):
        shown = ", ".join(str(candidate_paths(name, entry, data_root, f, s)[0]) for f, s in missing[:4])
        raise DatasetNotFound(f"{self.what_to_do(name, entry, data_root)}; missing {len(missing)} split file(s), "
                              f"e.g. {shown}")


SOURCES: dict[str, Source] = {s.name: s for s in (Synthetic(), Download(), Manual(), Local(), SyntheticQA(),
                                                   QATable())}


def source_of(entry: dict) -> Source:
    """The source of a registry entry."""
    return lookup(SOURCES, entry.get("source"), "data-set source")


def data_kind(entry: dict) -> str:
    """``letor`` or ``qa``: the kind of split the entry's source gives (see rankstudy.data.kinds)."""
    return source_of(entry).data_kind


def source_settings(entry: dict, config: dict) -> dict:
    """What the fetch job's record of a data set depends on, and nothing else: a generator's
    settings, or the registry entry (with the seed where the source uses one). Not data_root:
    the files are checked against their checksums and fingerprinted when parsed, so moving the
    data folder reruns nothing."""
    return source_of(entry).settings(entry, config)


def generator_settings(entry: dict, config: dict) -> dict | None:
    """What a generated data set's content depends on (its config section and the seed), or
    None for data read from files."""
    return source_of(entry).generated(entry, config)


def fetch(name: str, settings: dict, data_root: str | os.PathLike, folds: list[int], progress: Progress = print) -> dict:
    """The fetch job: make data set ``name`` available (``settings``: its ``source_settings``;
    only ``folds`` need be there) and return the record it writes."""
    entry = settings.get("entry") or settings
    return source_of(entry).fetch(name, settings, Path(data_root), folds, progress)


def read_fold(name: str, record: dict, fold: int, data_root: str | os.PathLike, progress: Progress = print):
    """``(splits, max_label, files)`` of one fold, from the fetch job's record."""
    return source_of(record).read_fold(name, record, fold, Path(data_root), progress)


def ensure_available(name: str, entry: dict, data_root: str | os.PathLike, download_dir: str | os.PathLike,
                     progress: Progress | None = print, folds: list[int] | None = None) -> Path:
    """Make sure the data set's folder (``{data_root}/{name}``) holds every split file of the
    data set (of ``folds`` if given); return that folder. A downloadable one is downloaded and
    unpacked (rankstudy.data.install); a ``manual`` or ``local`` one with missing files raises
    DatasetNotFound saying what to do; a generated one has no files (ValueError)."""
    return source_of(entry).ensure_available(name, entry, data_root, download_dir, progress, folds)
