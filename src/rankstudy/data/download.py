"""Resumable, checksum-verified downloads and safe archive extraction (stdlib + rarfile).

``download`` streams a URL into ``dest + '.part'`` and renames it to ``dest`` only after
the checksum matched, so ``dest`` is never a half-written file. An interrupted download
is resumed with an HTTP ``Range`` request the next time.

``extract`` unpacks zip, tar (any compression tarfile knows), single-file gzip and RAR
archives. The format comes from the file's magic bytes, not its name. Extraction goes
into a temporary sibling folder that is renamed to ``dest_dir`` at the end. An archive
whose content is damaged (truncated, corrupted, not an archive at all, unsafe member
names) raises ``ArchiveError``; problems of this machine (disk full, no RAR tool) raise a
plain ``DownloadError``, since fetching the archive again would not help.

A file that fails its checksum, or an archive that cannot be unpacked, is never reused:
``quarantine`` moves it aside (``NAME.broken-YYYYmmddTHHMMSSZ`` in the same folder), so
the next attempt downloads it again and the bad copy stays there to be looked at.
"""

from __future__ import annotations

import gzip
import hashlib
import http.client
import importlib.util
import lzma
import os
import shutil
import socket
import tarfile
import tempfile
import time
import urllib.error
import urllib.request
import zipfile
import zlib
from pathlib import Path
from typing import Callable

__all__ = [
    "ArchiveError",
    "ChecksumError",
    "DownloadError",
    "download",
    "extract",
    "detect_archive_format",
    "file_digest",
    "content_digests",
    "quarantine",
    "configure_rar_backend",
]

USER_AGENT = "rankstudy-downloader/0.1 (+python urllib)"
PROGRESS_INTERVAL_S = 0.5  # at most two progress lines per second
DEFAULT_TIMEOUT_S = 60.0


class DownloadError(RuntimeError):
    """A download or extraction failed; the message is one line meant for a person."""


class ArchiveError(DownloadError):
    """An archive's content cannot be unpacked (truncated, corrupted, not an archive, unsafe
    member names): the file itself is bad, so a fresh download may help."""


class ChecksumError(DownloadError):
    """A file's checksum differs from the one the registry states."""


def quarantine(path: str | os.PathLike, name: str | None = None) -> Path:
    """Move a bad file aside, beside itself, as ``NAME.broken-<UTC time>`` (``NAME``: ``name``,
    default the file's own); return the new path.

    Nothing is deleted (the copy can be looked at, or removed by hand), and the original
    name is free again, so the next attempt fetches the file anew."""
    path = Path(path)
    name = name or path.name
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    target = path.with_name(f"{name}.broken-{stamp}")
    n = 1
    while target.exists():
        n += 1
        target = path.with_name(f"{name}.broken-{stamp}-{n}")
    os.replace(path, target)
    return target


# ---------------------------------------------------------------------------
# download


def _part_path(dest: Path) -> Path:
    return dest.with_name(dest.name + ".part")


def _expected_digest(sha256: str | None, md5: str | None) -> tuple[str, str] | None:
    """The (algorithm, lowercase hex) to verify, sha256 preferred over md5."""
    if sha256:
        return "sha256", sha256.strip().lower()
    if md5:
        return "md5", md5.strip().lower()
    return None


def file_digest(path: str | os.PathLike, algorithm: str = "sha256", chunk_size: int = 1 << 20) -> str:
    """Hex digest of a file, read in chunks so large archives need little memory."""
    h = hashlib.new(algorithm)
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(chunk_size), b""):
            h.update(block)
    return h.hexdigest()


def content_digests(path: str | os.PathLike, chunk_size: int = 1 << 20) -> tuple[str, str | None]:
    """sha256 of a file's content, gunzipped when it is gzip (by magic bytes), and the sha256
    of the same content with CRLF line ends turned into LF (None when it has no CR byte).

    Registry checksums of split files are of the plain text; copies of LETOR files exist
    both gzipped and with CRLF line ends, and the parser reads them all alike. A damaged
    gzip stream raises ArchiveError."""
    path = Path(path)
    with open(path, "rb") as fh:
        gz = fh.read(2) == b"\x1f\x8b"
    raw, lf = hashlib.sha256(), hashlib.sha256()
    has_cr, carry = False, b""
    try:
        with (gzip.open(path, "rb") if gz else open(path, "rb")) as fh:
            for block in iter(lambda: fh.read(chunk_size), b""):
                raw.update(block)
                has_cr = has_cr or b"\r" in block
                block = carry + block
                carry = b"\r" if block.endswith(b"\r") else b""  # a CRLF may straddle two blocks
                lf.update((block[:-1] if carry else block).replace(b"\r\n", b"\n"))
    except (EOFError, zlib.error, gzip.BadGzipFile) as e:
        raise ArchiveError(f"{path}: damaged gzip file ({_damage_text(e)})") from None
    lf.update(carry)
    return raw.hexdigest(), (lf.hexdigest() if has_cr else None)


def _human_bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(n) < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GiB"  # unreachable, keeps type checkers quiet


def _progress_line(name: str, done: int, total: int | None) -> str:
    if total:
        return f"{name}: {_human_bytes(done)} / {_human_bytes(total)} ({100.0 * done / total:.0f}%)"
    return f"{name}: {_human_bytes(done)}"


def _manual_hint(url: str, dest: Path) -> str:
    return f"download {url} manually (e.g. with a browser) and save it as {dest}, then run again"


def _reason_text(exc: BaseException) -> str:
    """A short reason from urllib/socket errors, without the exception's repr noise."""
    if isinstance(exc, urllib.error.HTTPError):
        return f"HTTP {exc.code} {exc.reason}"
    if isinstance(exc, urllib.error.URLError):
        if not isinstance(exc.reason, BaseException):
            return str(exc.reason)
        exc = exc.reason
    if isinstance(exc, socket.gaierror):
        return f"host name lookup failed ({exc.strerror or exc})"
    if isinstance(exc, TimeoutError):  # socket.timeout is an alias since 3.10
        return "timed out"
    if isinstance(exc, ConnectionRefusedError):
        return "connection refused"
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return str(exc) or type(exc).__name__


def _open(url: str, offset: int, timeout: float):
    headers = {"User-Agent": USER_AGENT}
    if offset > 0:
        headers["Range"] = f"bytes={offset}-"
    return urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=timeout)


def _content_range_start_total(header: str | None) -> tuple[int | None, int | None]:
    """Parse 'bytes START-END/TOTAL' (TOTAL may be '*')."""
    if not header or not header.startswith("bytes "):
        return None, None
    try:
        span, _, total = header[6:].partition("/")
        start = int(span.split("-", 1)[0])
        return start, (int(total) if total.strip().isdigit() else None)
    except ValueError:
        return None, None


def _hash_existing(path: Path, algorithm: str | None, chunk_size: int):
    h = hashlib.new(algorithm) if algorithm else None
    if h is not None and path.exists():
        with open(path, "rb") as fh:
            for block in iter(lambda: fh.read(chunk_size), b""):
                h.update(block)
    return h


def _fetch_into_part(
    url: str,
    part: Path,
    algorithm: str | None,
    progress: Callable[[str], None] | None,
    chunk_size: int,
    timeout: float,
    name: str,
):
    """Fetch ``url`` into ``part`` (resuming when possible); return the running hash object."""
    offset = part.stat().st_size if part.exists() else 0
    try:
        resp = _open(url, offset, timeout)
    except urllib.error.HTTPError as e:
        if e.code == 416 and offset > 0:
            # Our .part is not a prefix the server can continue (often: already complete, or
            # the file changed upstream). Start over rather than guess.
            e.close()
            part.unlink()
            offset = 0
            resp = _open(url, 0, timeout)
        else:
            raise
    with resp:
        status = getattr(resp, "status", None) or resp.getcode()
        length = resp.headers.get("Content-Length")
        length = int(length) if length and length.isdigit() else None
        if offset > 0 and status == 206:
            start, total = _content_range_start_total(resp.headers.get("Content-Range"))
            if start != offset:
                raise DownloadError(
                    f"server answered a resume of {url} from byte {offset} with range start {start}; "
                    f"delete {part} and run again"
                )
            if total is None and length is not None:
                total = offset + length
            mode = "ab"
        else:
            # 200 (or 206 to a request without Range): the body is the whole file.
            if offset > 0 and progress:
                progress(f"{name}: server does not support resuming; starting over")
            offset, total, mode = 0, length, "wb"
        hasher = _hash_existing(part, algorithm, chunk_size) if mode == "ab" else (
            hashlib.new(algorithm) if algorithm else None
        )
        done = offset
        last_report = 0.0
        with open(part, mode) as out:
            while True:
                block = resp.read(chunk_size)
                if not block:
                    break
                out.write(block)
                if hasher is not None:
                    hasher.update(block)
                done += len(block)
                now = time.monotonic()
                if progress and now - last_report >= PROGRESS_INTERVAL_S:
                    progress(_progress_line(name, done, total))
                    last_report = now
        if progress:
            progress(_progress_line(name, done, total))
        if total is not None and done != total:
            raise DownloadError(
                f"download of {url} ended after {done} of {total} bytes; run again to resume "
                f"(partial data kept in {part})"
            )
    return hasher


def download(
    url: str,
    dest: str | os.PathLike,
    *,
    sha256: str | None = None,
    md5: str | None = None,
    progress: Callable[[str], None] | None = None,
    chunk_size: int = 1 << 20,
    timeout: float = DEFAULT_TIMEOUT_S,
) -> Path:
    """Download ``url`` to ``dest`` and return ``dest``.

    Resumable: data goes to ``dest + '.part'``; a later call continues it with
    ``Range: bytes=N-`` (appends on 206, starts over on 200). When a checksum is given it
    is verified at the end; on mismatch the data is moved aside (``quarantine``) and
    ChecksumError raised, so the next call downloads afresh. An existing ``dest`` is reused
    when it verifies (or when no checksum is given); one that fails its checksum is moved
    aside and downloaded again. Network failures raise DownloadError with a one-line
    message naming the URL.
    """
    dest = Path(dest)
    part = _part_path(dest)
    expected = _expected_digest(sha256, md5)
    algorithm = expected[0] if expected else None

    moved_note = ""
    if dest.exists():
        if expected is None:
            return dest
        got = file_digest(dest, expected[0], chunk_size)
        if got == expected[1]:
            return dest
        moved = quarantine(dest)
        moved_note = (f" ({dest} was there already, but its {expected[0]} is {got}, not {expected[1]}; "
                      f"it was moved aside to {moved.name})")
        if progress:
            progress(f"{dest.name}: {expected[0]} is {got}, expected {expected[1]}; moved aside to "
                     f"{moved.name}, downloading it again")

    dest.parent.mkdir(parents=True, exist_ok=True)
    try:
        hasher = _fetch_into_part(url, part, algorithm, progress, chunk_size, timeout, dest.name)
    except DownloadError as e:
        if not moved_note:
            raise
        raise DownloadError(f"{e}{moved_note}") from None
    except (urllib.error.URLError, OSError, http.client.HTTPException, ValueError) as e:
        # URLError covers DNS failure and refused connections; OSError resets and timeouts
        # mid-stream; HTTPException truncated bodies; ValueError a malformed URL.
        # `from None` keeps it to one clean line (partial data stays in .part for a resume).
        raise DownloadError(
            f"could not download {url}: {_reason_text(e)}; {_manual_hint(url, dest)}{moved_note}"
        ) from None

    if expected is not None:
        got = hasher.hexdigest() if hasher is not None else file_digest(part, expected[0], chunk_size)
        if got != expected[1]:
            moved = quarantine(part, dest.name)
            raise ChecksumError(
                f"checksum mismatch for {dest.name} downloaded from {url}: expected {expected[0]} {expected[1]}, "
                f"got {got}; the data was moved aside to {moved}. Run again to download it anew; if it "
                f"mismatches again, the file upstream has changed or the checksum in the registry is wrong: "
                f"check the file, then correct the checksum (or set it to null)"
            )
    os.replace(part, dest)
    return dest


# ---------------------------------------------------------------------------
# format detection

RAR4_MAGIC = b"Rar!\x1a\x07\x00"
RAR5_MAGIC = b"Rar!\x1a\x07\x01\x00"


def _looks_like_tar_header(block: bytes) -> bool:
    if len(block) < 512:
        return False
    if block[257:262] == b"ustar":
        return True
    try:  # old v7 tar has no magic; a valid header checksum is good evidence
        tarfile.TarInfo.frombuf(block[:512], "utf-8", "surrogateescape")
        return True
    except (tarfile.HeaderError, ValueError):
        return False


def detect_archive_format(path: str | os.PathLike) -> str:
    """One of 'zip', 'tar', 'gz' (single file), 'rar' from the magic bytes.

    Compressed tars (gz, bz2, xz) report 'tar'. Raises ArchiveError for anything else
    (a truncated or corrupted gzip stream, an HTML error page saved as the archive, ...).
    """
    path = Path(path)
    with open(path, "rb") as fh:
        head = fh.read(600)
    if head.startswith(b"PK\x03\x04") or head.startswith(b"PK\x05\x06"):
        return "zip"
    if head.startswith(RAR4_MAGIC) or head.startswith(RAR5_MAGIC):
        return "rar"
    if head.startswith(b"\x1f\x8b"):
        try:
            with gzip.open(path, "rb") as gz:
                inner = gz.read(512)
        except (OSError, EOFError, zlib.error) as e:
            raise ArchiveError(f"{path} looks like gzip but cannot be read: {_damage_text(e)}") from None
        return "tar" if _looks_like_tar_header(inner) else "gz"
    if head.startswith(b"BZh") or head.startswith(b"\xfd7zXZ\x00") or _looks_like_tar_header(head):
        if tarfile.is_tarfile(path):
            return "tar"
    raise ArchiveError(
        f"{path}: unknown archive format (first bytes {head[:8]!r}); expected zip, tar(.gz), gz or rar"
    )


# ---------------------------------------------------------------------------
# extraction helpers


def _safe_target(root: Path, member_name: str, archive: Path) -> Path:
    """The path a member would be written to; refuse absolute paths and '..' escapes."""
    name = member_name.replace("\\", "/")
    target = (root / name).resolve()
    if name.startswith("/") or (target != root and root not in target.parents):
        raise ArchiveError(f"{archive}: member {member_name!r} would be written outside {root}; refusing")
    return target


def _extract_zip(archive: Path, root: Path) -> None:
    with zipfile.ZipFile(archive) as zf:
        for name in zf.namelist():
            _safe_target(root, name, archive)
        zf.extractall(root)


def _extract_tar(archive: Path, root: Path) -> None:
    with tarfile.open(archive, "r:*") as tf:
        members = tf.getmembers()
        for m in members:
            _safe_target(root, m.name, archive)
            if m.issym() or m.islnk():
                link_base = root if m.islnk() else (root / m.name).parent
                link = (link_base / m.linkname).resolve()
                if m.linkname.startswith("/") or (link != root and root not in link.parents):
                    raise ArchiveError(
                        f"{archive}: link {m.name!r} -> {m.linkname!r} points outside {root}; refusing"
                    )
            if m.isdev():
                raise ArchiveError(f"{archive}: member {m.name!r} is a device file; refusing")
        if hasattr(tarfile, "data_filter"):  # Python >= 3.11.4 / 3.12: second line of defence
            tf.extractall(root, members=members, filter="data")
        else:  # pragma: no cover - older Pythons; members were checked above
            tf.extractall(root, members=members)


def _extract_gz(archive: Path, root: Path) -> None:
    name = archive.name[:-3] if archive.name.lower().endswith(".gz") else archive.name + ".out"
    with gzip.open(archive, "rb") as src, open(root / name, "wb") as out:
        shutil.copyfileobj(src, out, 1 << 20)


def _bundled_7z() -> Path | None:
    """The 7z binary shipped inside the `extractcode-7z` wheel, found without importing it
    (its __init__ imports the optional `plugincode` package)."""
    spec = importlib.util.find_spec("extractcode_7z")
    if spec is None or not spec.submodule_search_locations:
        return None
    for folder in spec.submodule_search_locations:
        exe = Path(folder) / "bin" / "7z"
        if exe.is_file() and os.access(exe, os.X_OK):
            return exe
    return None


_RAR_INSTALL_HINT = (
    "no RAR backend found; install one of: `pip install extractcode-7z` (ships a 7z binary), "
    "or `apt-get install unar` / `libarchive-tools` (bsdtar) / `unrar`"
)


def configure_rar_backend() -> str:
    """Point rarfile at a working extraction tool and return its command.

    Prefers the 7z binary from `extractcode-7z`, then unrar/unar/7z/bsdtar on PATH.
    Raises DownloadError naming what to install when none works.
    """
    try:
        import rarfile
    except ImportError:
        raise DownloadError("the `rarfile` package is needed to unpack RAR archives: pip install rarfile") from None
    exe = _bundled_7z()
    if exe is not None:
        rarfile.SEVENZIP_TOOL = str(exe)
        try:
            rarfile.tool_setup(unrar=False, unar=False, bsdtar=False, sevenzip=True, sevenzip2=False, force=True)
            return str(exe)
        except rarfile.RarCannotExec:
            rarfile.SEVENZIP_TOOL = "7z"  # bundled binary does not run here; try PATH tools
    try:
        setup = rarfile.tool_setup(force=True)
    except rarfile.RarCannotExec:
        raise DownloadError(_RAR_INSTALL_HINT) from None
    return setup.get_cmdline("check_cmd", None)[0]


def _extract_rar(archive: Path, root: Path) -> None:
    configure_rar_backend()
    import rarfile

    try:
        with rarfile.RarFile(archive) as rf:
            for name in rf.namelist():
                _safe_target(root, name, archive)
            rf.extractall(root)
    except rarfile.RarCannotExec:
        raise DownloadError(_RAR_INSTALL_HINT) from None
    except rarfile.Error as e:
        raise ArchiveError(f"{archive}: cannot unpack RAR archive: {e}") from None


_EXTRACTORS = {"zip": _extract_zip, "tar": _extract_tar, "gz": _extract_gz, "rar": _extract_rar}

# what the stdlib readers raise on damaged data (truncated or corrupted streams, bad CRCs);
# an OSError without errno (gzip.BadGzipFile, bz2's "Invalid data stream") is damage too,
# while one with errno (ENOSPC, EACCES) is this machine's problem, not the archive's
_DAMAGE = (EOFError, zlib.error, lzma.LZMAError, zipfile.BadZipFile, tarfile.TarError)


def _damage_text(exc: BaseException) -> str:
    text = str(exc) or type(exc).__name__
    if isinstance(exc, zlib.error):
        return f"corrupted compressed data ({text})"
    if isinstance(exc, EOFError):
        return f"truncated ({text})"
    return text


def extract(archive: str | os.PathLike, dest_dir: str | os.PathLike) -> Path:
    """Unpack ``archive`` so its contents are in ``dest_dir``; return ``dest_dir``.

    All-or-nothing: contents go to a temporary sibling folder first, which then becomes
    ``dest_dir`` (which must not exist yet, or be empty). On failure nothing is left behind.
    A damaged archive raises ArchiveError; the archive itself is left where it is (the caller
    decides whether to ``quarantine`` it).
    """
    archive, dest_dir = Path(archive), Path(dest_dir)
    if not archive.is_file():
        raise DownloadError(f"archive not found: {archive}")
    if dest_dir.exists() and (not dest_dir.is_dir() or any(dest_dir.iterdir())):
        raise DownloadError(f"cannot extract {archive}: {dest_dir} already exists and is not empty")
    fmt = detect_archive_format(archive)
    dest_dir.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{dest_dir.name}.extract-", dir=dest_dir.parent))
    try:
        try:
            _EXTRACTORS[fmt](archive, tmp.resolve())
        except DownloadError:
            raise
        except _DAMAGE as e:
            raise ArchiveError(f"{archive}: cannot unpack {fmt} archive: {_damage_text(e)}") from None
        except OSError as e:
            if e.errno is None:  # gzip.BadGzipFile, bz2 "Invalid data stream": damaged data
                raise ArchiveError(f"{archive}: cannot unpack {fmt} archive: {_damage_text(e)}") from None
            raise DownloadError(f"cannot unpack {archive} into {dest_dir.parent}: {e.strerror or e}") from None
        if dest_dir.exists():
            dest_dir.rmdir()  # empty, checked above
        os.replace(tmp, dest_dir)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return dest_dir
