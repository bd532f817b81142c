"""The data-set registry (config/datasets.yaml): reading it and checking its entries.

Each entry names its ``source`` (rankstudy.data.sources), which says which keys the entry
needs and how its files are found or made; see the header of config/datasets.yaml for the
fields. Further registry files (a user's own data sets) are merged over the shipped one by
``load_registries``. ``files_sha256`` states the sha256 of split files' plain-text content,
keyed by the file as the ``layout`` writes it (rankstudy.data.splitfiles).
"""

from __future__ import annotations

import os
import re
import string
from pathlib import Path

import yaml

from rankstudy.data.sources import SOURCES
from rankstudy.data.splitfiles import SPLITS, relative_split_path
from rankstudy.util import yamlfile

__all__ = [
    "RegistryError",
    "default_registry_path",
    "load_registry",
    "load_registries",
    "validate_entry",
]

ARCHIVES = ("rar", "zip", "gz", "tar.gz")
CHECKSUM_HEX_LEN = {"sha256": 64, "md5": 32}


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
    kind = SOURCES[source]
    for key in kind.required:
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
    if out.get("train_documents") is not None:  # a fold's training documents: what a method must hold
        n = out["train_documents"]
        if not isinstance(n, int) or isinstance(n, bool) or n < 1:
            raise _fail(path, name, "train_documents", f"must be a positive integer, got {n!r}")
    if out.get("footprint_shape") is not None and out["footprint_shape"] not in ("mslr30k", "yahoo", "istella"):
        raise _fail(path, name, "footprint_shape", f"must be mslr30k, yahoo or istella, got {out['footprint_shape']!r}")
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
    if not isinstance(split_names, dict) or any(k not in SPLITS or not isinstance(v, str) or not v
                                               or Path(v).is_absolute() or ".." in Path(v).parts
                                               for k, v in split_names.items()):
        raise _fail(path, name, "split_names", f"must map {list(SPLITS)} to file-name parts inside the data "
                    f"set's folder (no '..', not absolute), got {split_names!r}")
    out["split_names"] = dict(split_names)
    mirrors = out.get("mirrors") or []
    if not isinstance(mirrors, list) or not all(isinstance(m, str) for m in mirrors):
        raise _fail(path, name, "mirrors", f"must be a list of URLs, got {mirrors!r}")
    out["mirrors"] = list(mirrors)

    if not kind.has_files:
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
                               or (not kind.absolute_folder and (Path(folder).is_absolute() or ".." in Path(folder).parts))):
        raise _fail(path, name, "folder", f"must be a folder name or path relative to data_root"
                    f"{' (or absolute)' if kind.absolute_folder else ''}, got {folder!r}")
    files_sha256 = out.get("files_sha256")
    if files_sha256 is not None:
        if not isinstance(files_sha256, dict) or not all(
                isinstance(k, str) and not Path(k).is_absolute() and ".." not in Path(k).parts
                and isinstance(v, str) and re.fullmatch("[0-9a-fA-F]{64}", v) for k, v in files_sha256.items()):
            raise _fail(path, name, "files_sha256", "must map file names as the layout writes them "
                        "(e.g. Fold1/train.txt) to 64 hex digits, or be null")
        known = {relative_split_path(name, out, f, s) for f in range(1, folds + 1) for s in splits}
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
    if kind.needs_checksum and "sha256" not in out and "md5" not in out:
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
        raw = yamlfile.safe_load(text)
    except yaml.YAMLError as e:
        raise RegistryError(f"{path}: not valid YAML: {e}") from None
    if not isinstance(raw, dict) or not raw:
        raise RegistryError(f"{path}: must be a non-empty mapping of data set name -> fields")
    return {str(name): validate_entry(str(name), entry, path) for name, entry in raw.items()}
