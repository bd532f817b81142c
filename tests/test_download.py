"""download() against a real loopback HTTP server, and extract() on real archives built here."""

from __future__ import annotations

import errno
import gzip
import hashlib
import io
import re
import socket
import struct
import subprocess
import tarfile
import zipfile
import zlib
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest

from rankstudy.data import download as download_module
from rankstudy.data.download import (
    ArchiveError,
    ChecksumError,
    DownloadError,
    configure_rar_backend,
    content_digests,
    detect_archive_format,
    download,
    extract,
    quarantine,
)
from loopback import serving

PAYLOAD = bytes(range(256)) * 800  # 200 KiB, not repetitive within a chunk boundary of 1 KiB
PAYLOAD_SHA256 = hashlib.sha256(PAYLOAD).hexdigest()
PAYLOAD_MD5 = hashlib.md5(PAYLOAD).hexdigest()


# ---------------------------------------------------------------------------
# loopback server


class RangeHandler(BaseHTTPRequestHandler):
    """Serves ``server.files[path]``; honours ``Range: bytes=N-`` unless ``server.honor_range``
    is false; the first ``server.truncate_once`` responses stop after that many body bytes."""

    protocol_version = "HTTP/1.1"

    def log_message(self, *args):  # keep test output clean
        pass

    def do_GET(self):
        srv = self.server
        srv.requests.append({"path": self.path, "range": self.headers.get("Range")})
        data = srv.files.get(self.path)
        if data is None:
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        rng = self.headers.get("Range")
        start = 0
        if rng and srv.honor_range and rng.startswith("bytes=") and rng.endswith("-"):
            start = int(rng[6:-1])
            if start >= len(data):
                self.send_response(416)
                self.send_header("Content-Range", f"bytes */{len(data)}")
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            self.send_response(206)
            self.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
        else:
            self.send_response(200)
        body = data[start:]
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Connection", "close")
        self.end_headers()
        if srv.truncate_once is not None:
            body, srv.truncate_once = body[: srv.truncate_once], None
        self.wfile.write(body)
        self.close_connection = True


@pytest.fixture()
def server():
    with serving(RangeHandler) as srv:
        srv.files, srv.requests, srv.honor_range, srv.truncate_once = {"/data.bin": PAYLOAD}, [], True, None
        yield srv


def closed_loopback_port() -> int:
    """A port on 127.0.0.1 that nothing listens on (bound, then released)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# ---------------------------------------------------------------------------
# download


def test_full_download_with_sha256(server, tmp_path):
    lines = []
    dest = download(server.url("/data.bin"), tmp_path / "d" / "data.bin", sha256=PAYLOAD_SHA256,
                    progress=lines.append, chunk_size=1024)
    assert dest.read_bytes() == PAYLOAD
    assert not (tmp_path / "d" / "data.bin.part").exists()
    assert server.requests[0]["range"] is None
    # 200 chunks arrived within well under a second: throttled to a few lines, last one complete
    assert 1 <= len(lines) <= 5
    assert "200.0 KiB / 200.0 KiB (100%)" in lines[-1]


def test_md5_is_accepted(server, tmp_path):
    assert download(server.url("/data.bin"), tmp_path / "x", md5=PAYLOAD_MD5).read_bytes() == PAYLOAD


BROKEN = re.compile(r"^data\.bin\.broken-\d{8}T\d{6}Z(-\d+)?$")


def test_checksum_mismatch_quarantines_data_and_a_retry_downloads_again(server, tmp_path):
    wrong = "0" * 64
    url = server.url("/data.bin")
    with pytest.raises(ChecksumError) as err:
        download(url, tmp_path / "data.bin", sha256=wrong)
    msg = str(err.value)
    # names the file, the URL, both digests and what to do; one line, no traceback chain
    assert "data.bin" in msg and url in msg and wrong in msg and PAYLOAD_SHA256 in msg
    assert "moved aside" in msg and "Run again" in msg and "\n" not in msg
    [moved] = list(tmp_path.iterdir())  # neither dest nor .part left: only the quarantined copy
    assert BROKEN.match(moved.name) and moved.read_bytes() == PAYLOAD
    assert str(moved) in msg
    # the next attempt starts from scratch (nothing is resumed from the bad data)
    assert download(url, tmp_path / "data.bin", sha256=PAYLOAD_SHA256).read_bytes() == PAYLOAD
    assert [r["range"] for r in server.requests] == [None, None]


def test_quarantine_never_overwrites(tmp_path):
    first, second = tmp_path / "a.zip", tmp_path / "a.zip"
    first.write_bytes(b"one")
    moved1 = quarantine(first)
    second.write_bytes(b"two")
    moved2 = quarantine(second)
    assert moved1 != moved2 and moved1.read_bytes() == b"one" and moved2.read_bytes() == b"two"
    assert not (tmp_path / "a.zip").exists()


def test_resume_from_partial_file(server, tmp_path):
    dest = tmp_path / "data.bin"
    (tmp_path / "data.bin.part").write_bytes(PAYLOAD[:70_000])
    download(server.url("/data.bin"), dest, sha256=PAYLOAD_SHA256)
    assert server.requests[-1]["range"] == "bytes=70000-"
    assert len(server.requests) == 1
    assert dest.read_bytes() == PAYLOAD


def test_server_ignoring_range_restarts(server, tmp_path):
    server.honor_range = False
    dest = tmp_path / "data.bin"
    (tmp_path / "data.bin.part").write_bytes(PAYLOAD[:70_000])
    lines = []
    download(server.url("/data.bin"), dest, sha256=PAYLOAD_SHA256, progress=lines.append)
    assert server.requests[-1]["range"] == "bytes=70000-"  # asked, got 200, started over
    assert dest.read_bytes() == PAYLOAD
    assert any("starting over" in line for line in lines)


def test_interrupted_download_keeps_part_and_resumes(server, tmp_path):
    server.truncate_once = 50_000
    dest, url = tmp_path / "data.bin", server.url("/data.bin")
    with pytest.raises(DownloadError) as err:
        download(url, dest, sha256=PAYLOAD_SHA256)
    assert url in str(err.value)
    assert not dest.exists()
    assert (tmp_path / "data.bin.part").stat().st_size == 50_000
    download(url, dest, sha256=PAYLOAD_SHA256)
    assert server.requests[-1]["range"] == "bytes=50000-"
    assert dest.read_bytes() == PAYLOAD


def test_complete_part_gets_416_then_restarts(server, tmp_path):
    dest = tmp_path / "data.bin"
    (tmp_path / "data.bin.part").write_bytes(PAYLOAD)  # complete, but never renamed
    download(server.url("/data.bin"), dest, sha256=PAYLOAD_SHA256)
    assert [r["range"] for r in server.requests] == [f"bytes={len(PAYLOAD)}-", None]
    assert dest.read_bytes() == PAYLOAD


def test_existing_dest_is_verified_and_reused(server, tmp_path):
    dest = tmp_path / "data.bin"
    dest.write_bytes(PAYLOAD)
    assert download(server.url("/data.bin"), dest, sha256=PAYLOAD_SHA256) == dest
    assert server.requests == []
    # a file that fails its checksum is moved aside (never deleted) and downloaded again
    dest.write_bytes(b"something else")
    lines = []
    assert download(server.url("/data.bin"), dest, sha256=PAYLOAD_SHA256, progress=lines.append) == dest
    assert dest.read_bytes() == PAYLOAD and len(server.requests) == 1
    [moved] = [p for p in tmp_path.iterdir() if p != dest]
    assert BROKEN.match(moved.name) and moved.read_bytes() == b"something else"
    assert any("moved aside" in line and moved.name in line for line in lines)


def test_existing_bad_dest_is_named_when_the_new_download_fails(tmp_path):
    dest = tmp_path / "MQ.rar"
    dest.write_bytes(b"something else")
    with pytest.raises(DownloadError) as err:
        download(f"http://127.0.0.1:{closed_loopback_port()}/MQ.rar", dest, sha256=PAYLOAD_SHA256, timeout=5)
    assert "connection refused" in str(err.value) and "moved aside" in str(err.value)
    assert not dest.exists()


def test_connection_refused_is_one_clean_line(tmp_path):
    url = f"http://127.0.0.1:{closed_loopback_port()}/MQ2008.rar"
    dest = tmp_path / "MQ2008.rar"
    with pytest.raises(DownloadError) as err:
        download(url, dest, timeout=5)
    msg = str(err.value)
    assert url in msg and str(dest) in msg and "manually" in msg
    assert "\n" not in msg and "Traceback" not in msg
    assert err.value.__suppress_context__  # raised `from None`: no chained traceback
    assert not dest.exists()


def test_http_404_names_url(server, tmp_path):
    url = server.url("/missing.zip")
    with pytest.raises(DownloadError, match="HTTP 404") as err:
        download(url, tmp_path / "missing.zip")
    assert url in str(err.value)


# ---------------------------------------------------------------------------
# extraction

FILES = {"MQ/Fold1/train.txt": b"2 qid:1 1:0.5 2:0.25\n0 qid:1 1:0.1 2:0.0\n", "MQ/readme.txt": b"hello\n"}


def read_tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def test_extract_zip_detected_by_magic_not_suffix(tmp_path):
    archive = tmp_path / "download.bin"  # misleading name: detection must use the bytes
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in FILES.items():
            zf.writestr(name, data)
    assert detect_archive_format(archive) == "zip"
    out = extract(archive, tmp_path / "out")
    assert read_tree(out) == FILES
    assert sorted(p.name for p in tmp_path.iterdir()) == ["download.bin", "out"]  # no temp dir left


def _write_tar_gz(path: Path, files: dict[str, bytes]) -> None:
    with tarfile.open(path, "w:gz") as tf:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))


def test_extract_tar_gz(tmp_path):
    archive = tmp_path / "data.tar.gz"
    _write_tar_gz(archive, FILES)
    assert detect_archive_format(archive) == "tar"
    assert read_tree(extract(archive, tmp_path / "out")) == FILES


def test_tar_member_escaping_dest_is_refused(tmp_path):
    archive = tmp_path / "evil.tar.gz"
    _write_tar_gz(archive, {"ok.txt": b"fine", "../escaped.txt": b"bad"})
    with pytest.raises(DownloadError, match="outside"):
        extract(archive, tmp_path / "out")
    assert not (tmp_path / "escaped.txt").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["evil.tar.gz"]  # nothing half-extracted


def test_extract_single_gz(tmp_path):
    archive = tmp_path / "train.txt.gz"
    archive.write_bytes(gzip.compress(FILES["MQ/Fold1/train.txt"]))
    assert detect_archive_format(archive) == "gz"
    assert read_tree(extract(archive, tmp_path / "out")) == {"train.txt": FILES["MQ/Fold1/train.txt"]}


def test_extract_refuses_non_empty_dest_and_unknown_format(tmp_path):
    archive = tmp_path / "a.gz"
    archive.write_bytes(gzip.compress(b"x"))
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "keep.txt").write_text("mine")
    with pytest.raises(DownloadError, match="not empty"):
        extract(archive, tmp_path / "out")
    junk = tmp_path / "junk.rar"
    junk.write_bytes(b"this is not an archive at all")
    with pytest.raises(DownloadError, match="unknown archive format"):
        extract(junk, tmp_path / "out2")


def _corrupt(data: bytes, start: int) -> bytes:
    """Flip bits through the deflate stream (from ``start``), keeping the gzip header intact."""
    out = bytearray(data)
    for k in range(start, len(out) - 20, 7):
        out[k] ^= 0x55
    return bytes(out)


def _tar_gz_bytes(files: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tf:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def _zip_bytes(files: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in files.items():
            zf.writestr(name, data * 50)
    return buf.getvalue()


BIG = {name: data * 400 for name, data in FILES.items()}
DAMAGED = {
    # name -> (archive bytes, file name, fragment of the message)
    "truncated zip": (_zip_bytes(FILES)[:200], "a.zip", "zip"),
    "zip with a bad member": (_zip_bytes(FILES)[:60] + b"\x00" * 40 + _zip_bytes(FILES)[100:], "a.zip", "zip"),
    "corrupted tar.gz": (_corrupt(_tar_gz_bytes(BIG), 40), "a.tar.gz", "corrupted compressed data"),
    "truncated tar.gz": (_tar_gz_bytes(BIG)[:len(_tar_gz_bytes(BIG)) // 2], "a.tar.gz", "truncated"),
    "corrupted gz": (_corrupt(gzip.compress(b"1 qid:1 1:0.5\n" * 5000), 30), "a.txt.gz", "gz"),
    "truncated gz": (gzip.compress(bytes(range(256)) * 400)[:-500], "a.txt.gz", "truncated"),
    "html page": (b"<!DOCTYPE html><html>Sign in to download</html>", "a.zip", "unknown archive format"),
}


@pytest.mark.parametrize("case", list(DAMAGED))
def test_damaged_archive_raises_archive_error_and_leaves_nothing(tmp_path, case):
    data, name, fragment = DAMAGED[case]
    archive = tmp_path / name
    archive.write_bytes(data)
    with pytest.raises(ArchiveError) as err:  # never a bare zlib.error, EOFError or BadZipFile
        extract(archive, tmp_path / "out")
    assert str(archive) in str(err.value) and fragment in str(err.value), str(err.value)
    assert err.value.__context__ is None or err.value.__suppress_context__  # one line, no chained traceback
    assert sorted(p.name for p in tmp_path.iterdir()) == [name]  # no temp folder, no half-extracted files


def test_disk_problems_are_not_blamed_on_the_archive(tmp_path, monkeypatch):
    """ENOSPC while writing is this machine's problem: a DownloadError, not an ArchiveError (which
    would move an intact archive aside)."""
    archive = tmp_path / "a.txt.gz"
    archive.write_bytes(gzip.compress(b"1 qid:1 1:0.5\n"))

    def full_disk(archive, root):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setitem(download_module._EXTRACTORS, "gz", full_disk)
    with pytest.raises(DownloadError, match="No space left") as err:
        extract(archive, tmp_path / "out")
    assert not isinstance(err.value, ArchiveError)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.txt.gz"]


@pytest.mark.parametrize("gz", [False, True])
def test_content_digests_plain_gzip_and_crlf(tmp_path, gz):
    text = b"".join(b"%d qid:1 1:0.%d #docid = d%d\n" % (i % 3, i, i) for i in range(2000))
    path = tmp_path / "f.txt"
    path.write_bytes(gzip.compress(text) if gz else text)
    assert content_digests(path) == (hashlib.sha256(text).hexdigest(), None)
    crlf = text.replace(b"\n", b"\r\n")
    path.write_bytes(gzip.compress(crlf) if gz else crlf)
    for chunk_size in (1 << 20, 7, 2):  # a CRLF split across two blocks still counts as LF
        assert content_digests(path, chunk_size) == (hashlib.sha256(crlf).hexdigest(),
                                                     hashlib.sha256(text).hexdigest())


# ---------------------------------------------------------------------------
# RAR 4.x, built by hand (no RAR creator is available)


def _rar4_block(head_type: int, flags: int, body: bytes, data: bytes = b"") -> bytes:
    """HEAD_CRC(2) HEAD_TYPE(1) HEAD_FLAGS(2) HEAD_SIZE(2) body [data]; HEAD_CRC is the low
    16 bits of the CRC32 of the header from HEAD_TYPE to its end (not the packed data)."""
    header = struct.pack("<BHH", head_type, flags, 7 + len(body)) + body
    return struct.pack("<H", zlib.crc32(header) & 0xFFFF) + header + data


def rar4_store_archive(files: dict[str, bytes]) -> bytes:
    marker = b"Rar!\x1a\x07\x00"
    main = _rar4_block(0x73, 0x0000, struct.pack("<HI", 0, 0))  # RESERVED1, RESERVED2
    dos_time = ((2024 - 1980) << 25) | (1 << 21) | (15 << 16) | (12 << 11)  # 2024-01-15 12:00:00
    blocks = []
    for name, data in files.items():
        raw_name = name.encode("ascii")
        body = struct.pack(
            "<IIBIIBBHI",
            len(data),  # PACK_SIZE
            len(data),  # UNP_SIZE
            3,  # HOST_OS: Unix
            zlib.crc32(data),  # FILE_CRC
            dos_time,  # FTIME
            20,  # UNP_VER 2.0
            0x30,  # METHOD: store
            len(raw_name),  # NAME_SIZE
            0o100644,  # ATTR: regular file rw-r--r--
        ) + raw_name
        blocks.append(_rar4_block(0x74, 0x8000, body, data))  # 0x8000: LONG_BLOCK (data follows)
    end = _rar4_block(0x7B, 0x4000, b"")
    return marker + main + b"".join(blocks) + end


def test_rar4_builder_matches_known_end_block():
    # The end-of-archive block every RAR 4 writer emits is C4 3D 7B 00 40 07 00.
    assert _rar4_block(0x7B, 0x4000, b"") == bytes.fromhex("c43d7b00400700")


def test_extract_rar4_byte_exact(tmp_path):
    try:
        tool = configure_rar_backend()
    except DownloadError as e:
        pytest.skip(f"no RAR backend can be made to work here: {e}")
    archive = tmp_path / "MQ.rar"
    archive.write_bytes(rar4_store_archive(FILES))
    assert detect_archive_format(archive) == "rar"
    assert read_tree(extract(archive, tmp_path / "out")) == FILES

    # rarfile reads 'store' members itself, so also check the backend tool directly on the
    # same archive: it is what unpacks the compressed members of real LETOR archives.
    import rarfile

    for name, data in FILES.items():
        cmd = rarfile.tool_setup().open_cmdline(None, str(archive), name)
        assert cmd[0] == tool
        out = subprocess.run(cmd, capture_output=True, timeout=60)
        assert out.returncode == 0, out.stderr.decode(errors="replace")
        assert out.stdout == data
