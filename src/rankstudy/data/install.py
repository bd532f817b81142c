"""Installing a downloadable data set: its archive fetched from ``url`` or a mirror, unpacked,
its files found and verified, and the data folder put in place whole."""

from __future__ import annotations

import os
import shutil
import tempfile
import urllib.parse
from pathlib import Path
from typing import Callable

from rankstudy.data.download import ArchiveError, ChecksumError, DownloadError, download, extract, quarantine
from rankstudy.data.splitfiles import SPLITS, DatasetNotFound, candidate_paths, candidates_in, dataset_dir, \
    missing_in, shown_path, verify_split_file

__all__ = ["install"]

MAX_SEARCH_DEPTH = 4  # how deep to look for the data folder inside an unpacked archive


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
        return not missing_in(folder, name, entry)

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


def install(name: str, entry: dict, data_root: str | os.PathLike, download_dir: str | os.PathLike,
            missing: list[tuple[int, str]], progress: Callable[[str], None] | None = print) -> Path:
    """Put a downloadable data set's files in its folder under ``data_root`` (``missing``: the
    (fold, split) files not there yet); return that folder.

    The archive is downloaded into ``download_dir`` (resumable, checksum-verified), unpacked
    into a temporary folder, its split files checked against ``files_sha256`` when the
    archive has no checksum of its own, and renamed into place, so the folder is either
    complete or absent. An archive that cannot be unpacked, or whose files fail their
    checksums, is moved aside (``download.quarantine``): the next attempt downloads it again.
    A folder someone already put there is never overwritten or mixed with.
    """
    data_root, download_dir = Path(data_root), Path(download_dir)
    folder = dataset_dir(name, entry, data_root)
    if folder.exists():
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
            path = next(p for p in candidates_in(data_dir, name, entry, fold, split) if p.is_file())
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
