"""Where a registry data set's split files are, and checking their content.

A data set ``name`` lives in ``{data_root}/{name}/`` (or ``{data_root}/{folder}``); the
entry's ``layout`` template says where each (fold, split) file is inside that folder. Files
may be plain (``.txt``) or gzip-compressed with ``.gz`` appended. ``files_sha256`` states
the sha256 of split files' plain-text content, checked by ``verify_split_file``.

Nothing here depends on the entry's source: what to do about a missing file is the
source's to say (rankstudy.data.sources), and is passed in.

Every file of a data set, of every source, resolves inside ``data_root`` after symlinks and
``..`` (or inside a ``local`` entry's own absolute ``folder``): :func:`inside_data` is the one
check, applied to the data set's folder and to every file the sources read.
"""

from __future__ import annotations

import os
from pathlib import Path

from rankstudy.data.download import ArchiveError, ChecksumError, content_digests

__all__ = [
    "SPLITS",
    "DataPathError",
    "DatasetNotFound",
    "inside_data",
    "dataset_dir",
    "shown_path",
    "relative_split_path",
    "candidates_in",
    "candidate_paths",
    "split_file",
    "missing_in",
    "missing_splits",
    "verify_split_file",
]

SPLITS = ("train", "vali", "test")


class DatasetNotFound(FileNotFoundError):
    """A data set's files are not where the registry says; the message says what to do."""


class DataPathError(ValueError):
    """A data set's folder or file lies outside data_root (or its own absolute folder); the
    message names the data set, the path and the registry keys that make it."""


def _boundary(entry: dict, data_root: str | os.PathLike) -> tuple[Path, str]:
    """The folder every file of the data set must resolve inside, and how messages name it:
    data_root, or the entry's own absolute ``folder`` (only a ``local`` entry may have one;
    the registry refuses it for the others)."""
    folder = entry.get("folder")
    if folder and Path(folder).is_absolute():
        return Path(folder), "its absolute folder"
    return Path(data_root), "data_root"


def inside_data(name: str, entry: dict, data_root: str | os.PathLike, path: str | os.PathLike,
                keys: str) -> Path:
    """``path``, if it resolves (symlinks and ``..`` followed) inside the data set's boundary
    (:func:`_boundary`); else DataPathError naming it and ``keys``, the registry keys that
    built it. The path need not exist yet (a data set still to be downloaded)."""
    boundary, what = _boundary(entry, data_root)
    real, root = Path(os.path.realpath(path)), Path(os.path.realpath(boundary))
    if real != root and root not in real.parents:
        raise DataPathError(
            f"data set {name!r}: {path} resolves to {real}, outside {what} {root}; a data set's files are "
            f"read only from inside {what} (after symlinks and '..'): correct its registry entry's {keys}, "
            f"or move the files (not a symlink to them) inside {root}")
    return Path(path)


def dataset_dir(name: str, entry: dict, data_root: str | os.PathLike) -> Path:
    """The data set's folder: ``{data_root}/{name}``, or ``{data_root}/{folder}`` for an entry
    with a ``folder`` (a ``local`` entry's absolute ``folder`` is taken as it is); DataPathError
    if it lies outside data_root (:func:`inside_data`)."""
    return inside_data(name, entry, data_root, Path(data_root) / (entry.get("folder") or name), "folder")


def shown_path(path: str | os.PathLike, data_root: str | os.PathLike) -> str:
    """``path`` as written in logs and results: a path under an absolute ``data_root`` becomes
    ``{data_root}/...``, so no machine's folder names are recorded; a path under a relative
    ``data_root`` (relative to the project, where jobs run) stays as it is."""
    path, data_root = Path(path), Path(data_root)
    if not data_root.is_absolute():
        return str(path)
    try:
        return str(Path("{data_root}") / Path(os.path.abspath(path)).relative_to(os.path.abspath(data_root)))
    except ValueError:
        return str(path)


def relative_split_path(name: str, entry: dict, fold: int, split: str) -> str:
    """The split's file as the layout names it, relative to the data set's folder (also the key
    of ``files_sha256``)."""
    splits = entry.get("splits", list(SPLITS))
    if split not in splits:
        raise ValueError(f"data set {name!r} has no split {split!r}; it has {', '.join(splits)}")
    folds = entry.get("folds", 1)
    if not isinstance(fold, int) or not 1 <= fold <= folds:
        raise ValueError(f"data set {name!r} has folds 1..{folds}; got fold {fold!r}")
    if not entry.get("layout"):
        raise ValueError(f"data set {name!r} is {entry.get('source')!r} and has no files")
    file_part = (entry.get("split_names") or {}).get(split, split)
    return entry["layout"].format(fold=fold, split=file_part)


def candidates_in(folder: Path, name: str, entry: dict, fold: int, split: str) -> list[Path]:
    """As the layout names the file (plain or .gz), then, where ``split_names`` renames the
    split, named with rankstudy's own split name (copies of LETOR 3.0 often are)."""
    names = [relative_split_path(name, entry, fold, split)]
    if (entry.get("split_names") or {}).get(split, split) != split:
        names.append(relative_split_path(name, {**entry, "split_names": {}}, fold, split))
    out = []
    for relative in names:
        exact = folder / relative
        if exact.name.endswith(".gz"):
            out += [exact, exact.with_name(exact.name[:-3])]
        else:
            out += [exact, exact.with_name(exact.name + ".gz")]
    return out


def candidate_paths(name: str, entry: dict, data_root: str | os.PathLike, fold: int, split: str) -> list[Path]:
    """Where a split's file may be, in order of preference: as in the layout, then gzipped
    (or, for a layout ending in .gz, also uncompressed)."""
    return candidates_in(dataset_dir(name, entry, data_root), name, entry, fold, split)


def split_file(name: str, entry: dict, data_root: str | os.PathLike, fold: int, split: str,
               what_to_do: str = "") -> Path:
    """The file of ``split`` (train/vali/test) of ``fold`` (1-based) of data set ``name``.

    Raises DatasetNotFound naming every path tried, then ``what_to_do`` about it.
    """
    tried = candidate_paths(name, entry, data_root, fold, split)
    for path in tried:
        if path.is_file():
            return inside_data(name, entry, data_root, path, "layout or split_names")
    raise DatasetNotFound(
        f"data set {name!r}: no {split} file for fold {fold}; tried {', '.join(str(p) for p in tried)}. "
        f"{what_to_do}".rstrip()
    )


def missing_in(folder: Path, name: str, entry: dict, folds: list[int] | None = None) -> list[tuple[int, str]]:
    """(fold, split) pairs whose file is absent from ``folder`` (all folds, or ``folds``)."""
    return [
        (fold, split)
        for fold in (folds or range(1, entry["folds"] + 1))
        for split in entry.get("splits", SPLITS)
        if not any(p.is_file() for p in candidates_in(folder, name, entry, fold, split))
    ]


def missing_splits(name: str, entry: dict, data_root: str | os.PathLike,
                   folds: list[int] | None = None) -> list[tuple[int, str]]:
    """(fold, split) pairs whose file is absent from the data set's folder (all folds, or ``folds``)."""
    return missing_in(dataset_dir(name, entry, data_root), name, entry, folds)


def verify_split_file(name: str, entry: dict, path: str | os.PathLike, fold: int, split: str,
                      shown: str | None = None, what_to_do: str | None = None) -> bool:
    """Check a split file against the entry's ``files_sha256``; return whether a checksum was
    stated (False: nothing to check). The digest is of the plain-text content (gunzipped),
    and CRLF line ends count as LF. A mismatch raises ChecksumError naming the file (as
    ``shown``), both digests and what to do."""
    key = relative_split_path(name, entry, fold, split)
    expected = (entry.get("files_sha256") or {}).get(key)
    if expected is None:
        return False
    expected = expected.lower()
    try:
        raw, lf = content_digests(path)
    except ArchiveError as e:
        raise ChecksumError(f"{shown or path}: cannot be read to check its checksum: "
                            f"{str(e).removeprefix(f'{path}: ')}; replace it with an intact copy") from None
    if expected in (raw, lf):
        return True
    if what_to_do is None:
        what_to_do = (f"replace it with the data set's own file (or remove the data set's folder so that it is "
                      f"downloaded again); if it is a variant you mean to use, register it under a name of "
                      f"its own in a registry_extra file, without files_sha256")
    raise ChecksumError(
        f"{shown or path}: checksum mismatch for {key} of data set {name!r}: expected sha256 {expected} "
        f"(registry key files_sha256), got {raw}; {what_to_do}"
    )
