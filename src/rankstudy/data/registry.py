"""The data-set registry (config/datasets.yaml): loading it, finding split files, fetching data.

A data set ``name`` lives in ``{data_root}/{name}/`` (a ``local`` entry may name another
``folder``); the registry's ``layout`` template says where each (fold, split) file is inside
that folder. Files may be plain (``.txt``) or gzip-compressed with ``.gz`` appended. See the
header of config/datasets.yaml for the fields. Further registry files (a user's own data
sets) are merged over the shipped one by ``load_registries``.

``files_sha256`` in an entry states the sha256 of split files' plain-text content: files
unpacked from an archive without a checksum of its own are verified before they are put
in place, and every split file is verified when a fold is read (``verify_split_file``).
"""

from __future__ import annotations

import os
import re
import shutil
import string
import tempfile
import urllib.parse
from pathlib import Path
from typing import Callable

import yaml

from rankstudy.data.download import ArchiveError, ChecksumError, DownloadError, content_digests, download, \
    extract, quarantine

__all__ = [
    "DatasetNotFound",
    "RegistryError",
    "SPLITS",
    "default_registry_path",
    "load_registry",
    "load_registries",
    "validate_entry",
    "dataset_dir",
    "shown_path",
    "verify_split_file",
    "split_file",
    "candidate_paths",
    "missing_splits",
    "ensure_available",
]

SPLITS = ("train", "vali", "test")
# the data kind (rankstudy.data.kinds) each source gives: LETOR feature vectors, or
# question-answer data with separate question and answer vectors
SOURCE_KINDS = {"synthetic": "letor", "download": "letor", "manual": "letor", "local": "letor",
                "synthetic_qa": "qa", "qa_table": "qa"}
SOURCES = tuple(SOURCE_KINDS)
# generated data sets: their content is their generator's settings (this config section) and the seed
GENERATOR_SECTIONS = {"synthetic": "synthetic", "synthetic_qa": "synthetic_qa"}
ARCHIVES = ("rar", "zip", "gz", "tar.gz")
REQUIRED = {
    "synthetic": ("folds",),
    "download": ("url", "archive", "n_features", "labels", "folds", "layout"),
    "manual": ("n_features", "labels", "folds", "layout", "instructions"),
    "local": ("labels", "folds", "layout"),
    "synthetic_qa": ("folds",),
    "qa_table": ("folds", "file", "instructions"),
}
CHECKSUM_HEX_LEN = {"sha256": 64, "md5": 32}
MAX_SEARCH_DEPTH = 4  # how deep to look for the data folder inside an unpacked archive


class DatasetNotFound(FileNotFoundError):
    """A data set's files are not where the registry says; the message says what to do."""


def data_kind(entry: dict) -> str:
    """``letor`` or ``qa``: the kind of split the entry's source gives (see rankstudy.data.kinds)."""
    return SOURCE_KINDS[entry["source"]]


def generator_settings(entry: dict, config: dict) -> dict | None:
    """What a generated data set's content depends on (its config section and the seed), or
    None for data read from files."""
    section = GENERATOR_SECTIONS.get(entry["source"])
    if section is None:
        return None
    return {"source": entry["source"], "seed": config.get("seed", 0), **(config.get(section) or {})}


def source_settings(entry: dict, config: dict) -> dict:
    """What the fetch step's record of a data set depends on, and nothing else: the generator's
    settings, or the registry entry (with the seed that splits a QA table into parts). Not
    data_root: the files are checked against their checksums and fingerprinted when parsed,
    so moving the data folder reruns nothing."""
    generated = generator_settings(entry, config)
    if generated is not None:
        return generated
    # the seed splits a QA table into parts, and carves a validation split where there is none
    seeded = entry["source"] == "qa_table" or "vali" not in entry.get("splits", SPLITS)
    return {"entry": entry, **({"seed": config.get("seed", 0)} if seeded else {})}


def dataset_dir(name: str, entry: dict, data_root: str | os.PathLike) -> Path:
    """The data set's folder: ``{data_root}/{name}``, or ``{data_root}/{folder}`` for an entry
    with a ``folder`` (a ``local`` entry's absolute ``folder`` is taken as it is)."""
    return Path(data_root) / (entry.get("folder") or name)


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


def qa_table_file(name: str, entry: dict, data_root: str | os.PathLike) -> Path:
    """The user's QA table of a `qa_table` entry, or DatasetNotFound saying where to put it."""
    path = Path(data_root) / name / entry["file"]
    if not path.exists():
        raise DatasetNotFound(f"data set {name!r}: {path} not found. {entry['instructions']}")
    return path


class RegistryError(ValueError):
    """config/datasets.yaml is malformed; the message names the file, data set and key."""


# ---------------------------------------------------------------------------
# registry


def default_registry_path() -> Path:
    """config/datasets.yaml of the repository this package lives in (src layout)."""
    return Path(__file__).resolve().parents[3] / "config" / "datasets.yaml"


def _fail(path: Path, name: str, key: str, problem: str) -> RegistryError:
    return RegistryError(f"{path}: data set {name!r}, key {key!r}: {problem}")


def _template_fields(template: str) -> set[str]:
    return {field for _, field, _, _ in string.Formatter().parse(template) if field is not None}


def validate_entry(name: str, entry: object, path: Path | str = "<registry>") -> dict:
    """Check one registry entry and return a copy with defaults filled in
    (``splits``, ``split_names``, ``mirrors``). Raises RegistryError naming ``name`` and the key."""
    path = Path(path)
    if not isinstance(entry, dict):
        raise RegistryError(f"{path}: data set {name!r} must be a mapping of fields, got {type(entry).__name__}")
    source = entry.get("source")
    if source not in SOURCES:
        raise _fail(path, name, "source", f"must be one of {', '.join(SOURCES)}, got {source!r}")
    for key in REQUIRED[source]:
        if entry.get(key) is None:
            raise _fail(path, name, key, f"required for source {source!r} but missing or null")
    out = dict(entry)

    folds = out["folds"]
    if not isinstance(folds, int) or isinstance(folds, bool) or folds < 1:
        raise _fail(path, name, "folds", f"must be a positive integer, got {folds!r}")
    if "n_features" in out and out["n_features"] is not None:
        n = out["n_features"]
        if not isinstance(n, int) or isinstance(n, bool) or n < 1:
            raise _fail(path, name, "n_features", f"must be a positive integer, got {n!r}")
    if "labels" in out and out["labels"] is not None:
        labels = out["labels"]
        if (not isinstance(labels, list) or len(labels) != 2
                or not all(isinstance(v, int) and not isinstance(v, bool) for v in labels)
                or not 0 <= labels[0] <= labels[1]):
            raise _fail(path, name, "labels", f"must be [min, max] graded relevance labels, integers with "
                        f"0 <= min <= max, got {labels!r}")

    splits = out.setdefault("splits", list(SPLITS))
    if not isinstance(splits, list) or not splits or any(s not in SPLITS for s in splits):
        raise _fail(path, name, "splits", f"must be a non-empty list drawn from {list(SPLITS)}, got {splits!r}")
    split_names = out.get("split_names") or {}
    if not isinstance(split_names, dict) or any(k not in SPLITS or not isinstance(v, str)
                                               for k, v in split_names.items()):
        raise _fail(path, name, "split_names", f"must map {list(SPLITS)} to file-name parts, got {split_names!r}")
    out["split_names"] = dict(split_names)
    mirrors = out.get("mirrors") or []
    if not isinstance(mirrors, list) or not all(isinstance(m, str) for m in mirrors):
        raise _fail(path, name, "mirrors", f"must be a list of URLs, got {mirrors!r}")
    out["mirrors"] = list(mirrors)

    if source in ("synthetic", "synthetic_qa", "qa_table"):
        return out

    layout = out["layout"]
    if not isinstance(layout, str):
        raise _fail(path, name, "layout", f"must be a path template string, got {layout!r}")
    fields = _template_fields(layout)
    unknown = fields - {"fold", "split"}
    if unknown:
        raise _fail(path, name, "layout", f"unknown placeholder(s) {sorted(unknown)} in {layout!r}; "
                    "only {fold} and {split} are allowed")
    if len(splits) > 1 and "split" not in fields:
        raise _fail(path, name, "layout", f"{layout!r} needs a {{split}} placeholder")
    if folds > 1 and "fold" not in fields:
        raise _fail(path, name, "layout", f"{layout!r} needs a {{fold}} placeholder since folds = {folds}")
    if Path(layout).is_absolute() or ".." in Path(layout).parts:
        raise _fail(path, name, "layout", f"{layout!r} must be relative to the data set's folder")
    folder = out.get("folder")
    if folder is not None and (not isinstance(folder, str) or not folder.strip()
                               or (source != "local" and (Path(folder).is_absolute() or ".." in Path(folder).parts))):
        raise _fail(path, name, "folder", f"must be a folder name or path relative to data_root"
                    f"{' (or absolute)' if source == 'local' else ''}, got {folder!r}")
    files_sha256 = out.get("files_sha256")
    if files_sha256 is not None:
        if not isinstance(files_sha256, dict) or not all(
                isinstance(k, str) and not Path(k).is_absolute() and ".." not in Path(k).parts
                and isinstance(v, str) and re.fullmatch("[0-9a-fA-F]{64}", v) for k, v in files_sha256.items()):
            raise _fail(path, name, "files_sha256", "must map file names as the layout writes them "
                        "(e.g. Fold1/train.txt) to 64 hex digits, or be null")
        known = {_relative_split_path(name, out, f, s) for f in range(1, folds + 1) for s in splits}
        stray = sorted(set(files_sha256) - known)
        if stray:
            raise _fail(path, name, "files_sha256", f"{stray[0]!r} is not a split file of layout {layout!r} "
                        f"(e.g. {sorted(known)[0]!r})")

    if out.get("archive") is not None and out["archive"] not in ARCHIVES:
        raise _fail(path, name, "archive", f"must be one of {', '.join(ARCHIVES)}, got {out['archive']!r}")
    for key, hex_len in CHECKSUM_HEX_LEN.items():
        value = out.get(key)
        if value is not None and not (isinstance(value, str) and re.fullmatch(f"[0-9a-fA-F]{{{hex_len}}}", value)):
            raise _fail(path, name, key, f"must be {hex_len} hex digits or null, got {value!r}")
    if source == "download" and "sha256" not in out and "md5" not in out:
        raise _fail(path, name, "sha256", "state a checksum (sha256 or md5), or null when it is unknown")
    for key in ("url", "instructions", "archive_subdir", "licence", "description"):
        if out.get(key) is not None and not isinstance(out[key], str):
            raise _fail(path, name, key, f"must be a string, got {out[key]!r}")
    return out


def load_registries(paths: list[str | os.PathLike]) -> dict[str, dict]:
    """Read several registry files and merge them in order: an entry of a later file replaces
    the entry of the same name of an earlier one, whole (fields are not merged)."""
    merged: dict[str, dict] = {}
    for path in paths:
        merged.update(load_registry(path))
    return merged


def load_registry(path: str | os.PathLike | None = None) -> dict[str, dict]:
    """Read and validate the registry; ``path`` defaults to the repository's config/datasets.yaml."""
    path = Path(path) if path is not None else default_registry_path()
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise RegistryError(f"data set registry not found: {path}") from None
    try:
        raw = yaml.safe_load(text)
    except yaml.YAMLError as e:
        raise RegistryError(f"{path}: not valid YAML: {e}") from None
    if not isinstance(raw, dict) or not raw:
        raise RegistryError(f"{path}: must be a non-empty mapping of data set name -> fields")
    return {str(name): validate_entry(str(name), entry, path) for name, entry in raw.items()}


# ---------------------------------------------------------------------------
# locating files


def _relative_split_path(name: str, entry: dict, fold: int, split: str) -> str:
    splits = entry.get("splits", list(SPLITS))
    if split not in splits:
        raise ValueError(f"data set {name!r} has no split {split!r}; it has {', '.join(splits)}")
    folds = entry.get("folds", 1)
    if not isinstance(fold, int) or not 1 <= fold <= folds:
        raise ValueError(f"data set {name!r} has folds 1..{folds}; got fold {fold!r}")
    if entry.get("source") == "synthetic" or not entry.get("layout"):
        raise ValueError(f"data set {name!r} is {entry.get('source')!r} and has no files")
    file_part = (entry.get("split_names") or {}).get(split, split)
    return entry["layout"].format(fold=fold, split=file_part)


def _candidates_in(folder: Path, name: str, entry: dict, fold: int, split: str) -> list[Path]:
    """As the layout names the file (plain or .gz), then, where ``split_names`` renames the
    split, named with rankstudy's own split name (copies of LETOR 3.0 often are)."""
    names = [_relative_split_path(name, entry, fold, split)]
    if (entry.get("split_names") or {}).get(split, split) != split:
        names.append(_relative_split_path(name, {**entry, "split_names": {}}, fold, split))
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
    return _candidates_in(dataset_dir(name, entry, data_root), name, entry, fold, split)


def _what_to_do(name: str, entry: dict, data_root: Path) -> str:
    if entry.get("source") == "manual":
        return _instructions(name, entry, data_root)
    if entry.get("source") == "local":
        return _local_hint(name, entry, data_root)
    url = entry.get("url")
    return (f"fetch it with rankstudy.data.registry.ensure_available({name!r}, ...) (downloads {url}), "
            f"or put the files there by hand (layout {entry.get('layout')!r} under {data_root / name})")


def _instructions(name: str, entry: dict, data_root: Path) -> str:
    text = str(entry.get("instructions") or f"get {name} from {entry.get('url')}")
    return " ".join(text.replace("{data_root}", str(data_root)).split())


def _local_hint(name: str, entry: dict, data_root: Path) -> str:
    hint = (f"data set {name!r} is your own (source 'local'): its files are read from "
            f"{dataset_dir(name, entry, data_root)} following layout {entry.get('layout')!r} (plain or .gz), "
            f"never downloaded; put them there, or correct data_root, 'folder' or 'layout'")
    return hint + (f". {_instructions(name, entry, data_root)}" if entry.get("instructions") else "")


def split_file(name: str, entry: dict, data_root: str | os.PathLike, fold: int, split: str) -> Path:
    """The file of ``split`` (train/vali/test) of ``fold`` (1-based) of data set ``name``.

    Raises DatasetNotFound naming every path tried and what to do about it.
    """
    tried = candidate_paths(name, entry, data_root, fold, split)
    for path in tried:
        if path.is_file():
            return path
    raise DatasetNotFound(
        f"data set {name!r}: no {split} file for fold {fold}; tried {', '.join(str(p) for p in tried)}. "
        f"{_what_to_do(name, entry, Path(data_root))}"
    )


def _missing_in(folder: Path, name: str, entry: dict, folds: list[int] | None = None) -> list[tuple[int, str]]:
    return [
        (fold, split)
        for fold in (folds or range(1, entry["folds"] + 1))
        for split in entry.get("splits", SPLITS)
        if not any(p.is_file() for p in _candidates_in(folder, name, entry, fold, split))
    ]


def missing_splits(name: str, entry: dict, data_root: str | os.PathLike,
                   folds: list[int] | None = None) -> list[tuple[int, str]]:
    """(fold, split) pairs whose file is absent from the data set's folder (all folds, or ``folds``)."""
    return _missing_in(dataset_dir(name, entry, data_root), name, entry, folds)


# ---------------------------------------------------------------------------
# verifying


def _files_sha256_key(name: str, entry: dict, fold: int, split: str) -> str:
    return _relative_split_path(name, entry, fold, split)


def verify_split_file(name: str, entry: dict, path: str | os.PathLike, fold: int, split: str,
                      shown: str | None = None, what_to_do: str | None = None) -> bool:
    """Check a split file against the entry's ``files_sha256``; return whether a checksum was
    stated (False: nothing to check). The digest is of the plain-text content (gunzipped),
    and CRLF line ends count as LF. A mismatch raises ChecksumError naming the file (as
    ``shown``), both digests and what to do."""
    key = _files_sha256_key(name, entry, fold, split)
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


# ---------------------------------------------------------------------------
# fetching


def _archive_file_name(name: str, entry: dict, url: str) -> str:
    """The URL's own file name when it looks like an archive (so data sets sharing an archive,
    like LETOR 3.0 Gov.rar, share the download); else ``{name}.{archive}``."""
    base = Path(urllib.parse.unquote(urllib.parse.urlparse(url).path)).name
    if base.lower().endswith((".rar", ".zip", ".gz", ".tgz")):
        return base
    return f"{name}.{entry.get('archive') or 'archive'}"


def _find_data_dir(name: str, entry: dict, unpacked: Path) -> Path:
    """The folder inside an unpacked archive that holds the layout's files."""

    def complete(folder: Path) -> bool:
        return not _missing_in(folder, name, entry)

    subdir = entry.get("archive_subdir")
    if subdir:
        found = sorted(p for p in unpacked.glob(subdir) if p.is_dir())
        if len(found) != 1:
            raise DatasetNotFound(
                f"data set {name!r}: archive_subdir {subdir!r} matched {len(found)} folders in the unpacked "
                f"archive ({', '.join(str(p.relative_to(unpacked)) for p in found[:5]) or 'none'}); "
                f"top level holds: {_listing(unpacked)}; fix archive_subdir in the registry"
            )
        candidates = found
    else:
        candidates = [unpacked] + sorted(
            p for p in unpacked.rglob("*")
            if p.is_dir() and len(p.relative_to(unpacked).parts) <= MAX_SEARCH_DEPTH
        )
    complete_dirs = [p for p in candidates if complete(p)]
    if len(complete_dirs) == 1:
        return complete_dirs[0]
    if not complete_dirs:
        raise DatasetNotFound(
            f"data set {name!r}: the unpacked archive has no folder with all files of layout "
            f"{entry['layout']!r}; top level holds: {_listing(unpacked)}"
        )
    raise DatasetNotFound(
        f"data set {name!r}: several folders in the archive match layout {entry['layout']!r} "
        f"({', '.join(str(p.relative_to(unpacked)) for p in complete_dirs[:5])}); set archive_subdir in the registry"
    )


def _listing(folder: Path, limit: int = 10) -> str:
    names = sorted(p.name + ("/" if p.is_dir() else "") for p in folder.iterdir())
    return ", ".join(names[:limit]) + (" ..." if len(names) > limit else "") if names else "(nothing)"


def _download_archive(name: str, entry: dict, download_dir: Path, progress: Callable[[str], None] | None) -> Path:
    """Try ``url`` then each mirror; an archive already in download_dir is reused (and verified)."""
    errors = []
    for url in [entry["url"], *entry.get("mirrors", [])]:
        dest = download_dir / _archive_file_name(name, entry, url)
        if progress and not dest.exists():
            progress(f"{name}: downloading {url}")
        try:
            return download(url, dest, sha256=entry.get("sha256"), md5=entry.get("md5"), progress=progress)
        except DownloadError as e:
            errors.append(str(e))
            if progress:
                progress(f"{name}: {e}")
    first_dest = download_dir / _archive_file_name(name, entry, entry["url"])
    raise DownloadError(
        f"data set {name!r} could not be downloaded from any of its {len(errors)} URL(s). "
        f"Download {entry['url']} by hand and save it as {first_dest}, or put the unpacked files in the "
        f"data folder following layout {entry['layout']!r}. Errors: " + " | ".join(errors)
    )


def ensure_available(
    name: str,
    entry: dict,
    data_root: str | os.PathLike,
    download_dir: str | os.PathLike,
    progress: Callable[[str], None] | None = print,
    folds: list[int] | None = None,
) -> Path:
    """Make sure the data set's folder (``{data_root}/{name}``) holds every split file of the
    data set (of ``folds`` if given: a run of some folds needs only theirs); return that folder.

    Files already there are used as they are. A ``manual`` data set raises DatasetNotFound
    with its instructions, and so does a ``local`` one (a user's own files, never
    downloaded). Otherwise the archive is downloaded into ``download_dir`` (resumable,
    checksum-verified), unpacked into a temporary folder, its split files checked against
    ``files_sha256`` when the archive has no checksum of its own, and renamed into place, so
    the folder is either complete or absent. An archive that cannot be unpacked, or whose
    files fail their checksums, is moved aside (``download.quarantine``): the next attempt
    downloads it again.
    """
    data_root, download_dir = Path(data_root), Path(download_dir)
    folder = dataset_dir(name, entry, data_root)
    source = entry.get("source")
    if source == "synthetic":
        raise ValueError(f"data set {name!r} is synthetic: it is generated in memory and has no files")
    missing = missing_splits(name, entry, data_root, folds)
    if not missing:
        return folder
    if source == "manual":
        raise DatasetNotFound(
            f"data set {name!r} must be downloaded by hand (licence). {_instructions(name, entry, data_root)}"
        )
    if source == "local":
        shown = ", ".join(str(candidate_paths(name, entry, data_root, f, s)[0]) for f, s in missing[:4])
        raise DatasetNotFound(f"{_local_hint(name, entry, data_root)}; missing {len(missing)} split file(s), "
                              f"e.g. {shown}")
    if folder.exists():
        # Never overwrite or mix with what someone put there; say exactly what is missing.
        shown = ", ".join(str(candidate_paths(name, entry, data_root, f, s)[0]) for f, s in missing[:4])
        raise DatasetNotFound(
            f"data set {name!r}: {folder} exists but lacks {len(missing)} split file(s) (e.g. {shown}); "
            f"complete it by hand, or remove the folder to download and unpack it again"
        )

    if progress and entry.get("licence"):
        progress(f"{name}: licence: {entry['licence']}")
    archive = _download_archive(name, entry, download_dir, progress)
    data_root.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{name}.unpack-", dir=data_root))
    try:
        if progress:
            progress(f"{name}: unpacking {shown_path(archive, data_root)}")
        try:
            unpacked = extract(archive, tmp / "unpacked")
        except ArchiveError as e:
            raise _quarantined(name, entry, archive, f"it cannot be unpacked: {e}", data_root) from None
        data_dir = _find_data_dir(name, entry, unpacked)
        if not (entry.get("sha256") or entry.get("md5")):
            _verify_unpacked(name, entry, archive, data_dir, data_root, progress)
        os.replace(data_dir, folder)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if progress:
        progress(f"{name}: ready in {shown_path(folder, data_root)}")
    return folder


def _verify_unpacked(name: str, entry: dict, archive: Path, data_dir: Path, data_root: Path,
                     progress: Callable[[str], None] | None) -> None:
    """The archive had no checksum: check the files it held against ``files_sha256``."""
    checked = 0
    for fold in range(1, entry["folds"] + 1):
        for split in entry.get("splits", SPLITS):
            path = next(p for p in _candidates_in(data_dir, name, entry, fold, split) if p.is_file())
            try:
                checked += verify_split_file(name, entry, path, fold, split,
                                             shown=str(path.relative_to(data_dir)), what_to_do="")
            except ChecksumError as e:
                raise _quarantined(name, entry, archive, f"a file in it fails its checksum: {e}",
                                   data_root) from None
    if progress:
        progress(f"{name}: {checked} file(s) of the archive verified against files_sha256" if checked else
                 f"{name}: the registry states no checksum for the archive or its files; not verified")


def _quarantined(name: str, entry: dict, archive: Path, problem: str, data_root: Path) -> DownloadError:
    """Move a bad archive aside and say what happened and what to do."""
    moved = quarantine(archive)
    unverified = "" if (entry.get("sha256") or entry.get("md5") or entry.get("files_sha256")) else (
        f" (the registry states no checksum for {name}, so a download is only checked by unpacking it)")
    return ArchiveError(
        f"data set {name!r}: the archive {archive.name} is damaged, {problem.rstrip('; ')}; it was moved aside "
        f"to {shown_path(moved, data_root)}{unverified}. Run again to download it anew; if that fails the same "
        f"way, the file served at {entry.get('url')} is itself damaged: download it by hand from another "
        f"source and save it as {archive}, or put the unpacked files in {dataset_dir(name, entry, data_root)} "
        f"following layout {entry.get('layout')!r}. Delete the moved-aside copy when you no longer need it"
    )
