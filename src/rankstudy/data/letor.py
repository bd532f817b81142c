"""Reader for LETOR / SVMlight ranking files (``label qid:Q i:v i:v ... # comment``).

The parse is vectorised over the raw bytes: whitespace-separated fields, colons
and comments are located with numpy byte masks, the structure of every line is
checked with array comparisons, and all numbers are converted in one call to
pandas' C tokenizer (one token per line after turning separators into
newlines). Python never loops over lines on the happy path. When any check
fails, a slow line-by-line diagnostic pass re-reads only the offending chunk
to name the first bad line, so error messages still say ``file:line``.

When numba is installed, a compiled scan (``letor_numba``: one pass over the bytes, about 2.5x
faster) is tried on each chunk first. It gives the same arrays bit for bit and hands anything it
does not accept to the vectorised parse, which then reads the chunk or reports it as above.

Rules beyond the syntax, each reported as ``file:line``:

* labels: with ``labels=(lo, hi)`` (the pipeline passes the registry's ``labels``), every
  label must be an integer in ``lo..hi``; a fractional, negative or out-of-range label is an
  error (learners such as LightGBM's lambdarank take graded integer labels only).
  Without a range, any finite number is read.
* feature indices: 1-based; above ``n_features`` when it is given is an error. Without
  ``n_features`` the width is the largest index seen, which may be at most
  ``MAX_INFERRED_FEATURES``: a larger index (often a typo such as ``99999999999:1``) would
  ask for a dense matrix of terabytes, so it needs ``n_features`` stated.
* the dense matrix (rows x features x 8 bytes) must fit in this machine's memory.
"""

from __future__ import annotations

import csv
import gzip
import io
import math
import os
import re
import zlib
from pathlib import Path

import numpy as np
import pandas as pd

from rankstudy.data.rankdata import RankData
from rankstudy.data.blocks import offsets_from_qid, positions

GZIP_MAGIC = b"\x1f\x8b"
MAX_QID_DIGITS = 18  # anything longer may not fit in int64
CHUNK_BYTES = 32 << 20  # bounds the temporaries (several int64 arrays per field) on big files
MAX_INFERRED_FEATURES = 100_000  # the widest file read without n_features (the benchmarks have <= 700)
MAX_SHOWN_CHARS = 16  # the longest field an error message shows as it is
MAX_COMPILED_WIDTH = 1 << 24  # the compiled scan keeps one int64 per feature; wider files use numpy

_NL, _SPACE, _HASH, _COLON = 10, 32, ord("#"), ord(":")


_WHITESPACE = b" \t\r\n\v\f"
# bytes.translate tables: a C pass over the text, much faster than numpy fancy-index lookups
_WS_TO_ONE = bytes(int(c in _WHITESPACE) for c in range(256))
_WS_TO_NEWLINE = bytes(_NL if c in _WHITESPACE else c for c in range(256))
# After comments, colons and the 'qid' prefix are blanked only these may remain; anything else
# (letters of nan/inf, quotes, commas...) is an error, which also keeps pandas' CSV rules out of play.
_ALLOWED = b"0123456789.+-eE" + _WHITESPACE
_NUMBER = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")
_INTEGER = re.compile(r"-?\d+")
_INDEX = re.compile(r"\d+")
_NONFINITE = {"nan", "inf", "infinity"}
_ASCII_BLANKS = re.compile(r"[ \t\r\n\v\f]+")  # str.split() would also split on Unicode spaces


class LetorFormatError(ValueError):
    """Malformed LETOR/SVMlight input; the message names ``path:line``."""


def read_letor(path: str | os.PathLike, n_features: int | None = None,
               labels: tuple[int, int] | list[int] | None = None, shown: str | None = None) -> RankData:
    """Parse a LETOR/SVMlight ranking file (plain or gzip) into a query-grouped RankData.

    Features are 1-based and sparse (missing = 0). The number of columns is
    ``n_features`` when given (an index above it is an error), else the largest
    index seen (at most ``MAX_INFERRED_FEATURES``). ``labels`` = (min, max): every label
    must be an integer in that range. docid is taken from a ``docid = ...`` comment,
    else it is the row's 0-based position within its query. Queries split across the
    file are merged, keeping the order in which they first appear. Errors name the file
    as ``shown`` (default: the path) and the line.
    """
    path = Path(path)
    name = shown or str(path)
    label_range = None if labels is None else (int(labels[0]), int(labels[1]))
    raw = _read_bytes(path, name)
    view, parts, lines_before = memoryview(raw), [], 0
    for start, end in _chunk_bounds(raw, CHUNK_BYTES):
        parts.append(_parse_chunk(view[start:end], name, lines_before, n_features, label_range))
        lines_before += raw.count(b"\n", start, end)
    return _assemble(parts, name, n_features)


def check_disjoint_queries(splits: dict[str, RankData]) -> None:
    """Raise LetorFormatError if any query id occurs in more than one split (keys are file paths)."""
    names = list(splits)
    qids = {name: np.unique(splits[name].qid) for name in names}
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            shared = np.intersect1d(qids[a], qids[b], assume_unique=True)
            if len(shared):
                raise LetorFormatError(f"query {shared[0]} appears in both {a} and {b}")


# --- reading -----------------------------------------------------------------------------

def _read_bytes(path: Path, name: str) -> bytes:
    with open(path, "rb") as f:
        raw = f.read()
    # the magic bytes, not the suffix, decide: .gz files are sometimes stored decompressed
    if raw[:2] != GZIP_MAGIC:
        return raw
    try:
        return gzip.decompress(raw)
    except (OSError, EOFError, zlib.error) as e:  # truncated or corrupted gzip stream
        raise LetorFormatError(f"{name}: damaged gzip file ({e or type(e).__name__}); "
                               f"replace it with an intact copy") from None


def _chunk_bounds(raw: bytes, size: int):
    """Yield (start, end) of pieces of about ``size`` bytes that end on a line boundary."""
    start = 0
    while start < len(raw):
        cut = raw.find(b"\n", start + size)
        end = len(raw) if cut < 0 else cut + 1
        yield start, end
        start = end


def _ranges(starts: np.ndarray, stops: np.ndarray) -> np.ndarray:
    """Concatenation of ``arange(s, e)`` for each pair, without a Python loop."""
    lengths = stops - starts
    total = int(lengths.sum())
    offsets = np.cumsum(lengths) - lengths
    return np.arange(total) + np.repeat(starts - offsets, lengths)


# --- the vectorised parse of one chunk -------------------------------------------------------

def _parse_chunk(chunk: memoryview, name: str, lines_before: int, n_features: int | None,
                 labels: tuple[int, int] | None) -> dict:
    parsed = _parse_compiled(chunk, n_features, labels)
    if parsed is None:  # no numba, or the compiled scan refused: the numpy parse decides
        parsed = _parse_well_formed(chunk, n_features, labels)
    if parsed is None:  # something is malformed: find and report the first bad line
        _raise_first_error(bytes(chunk), name, lines_before, n_features, labels)
    return parsed


# --- the compiled parse of one chunk (numba), tried first -----------------------------------

def _compiled_scan():
    """The numba line scanner's module, or None without numba (the numpy parse then does all the work)."""
    try:
        # imported here: importing numba costs start-up time that files never read do not need
        from rankstudy.data import letor_numba
    except ImportError:
        return None
    return letor_numba


def _parse_compiled(chunk: memoryview, n_features: int | None, labels: tuple[int, int] | None) -> dict | None:
    """The same arrays as ``_parse_well_formed`` from one compiled pass, or None when the scan
    refuses the chunk (malformed, or unusual in a way it leaves to the numpy parse)."""
    compiled = _compiled_scan()
    limit = MAX_INFERRED_FEATURES if n_features is None else n_features
    if compiled is None or limit > MAX_COMPILED_WIDTH:
        return None
    buf = np.frombuffer(chunk, dtype=np.uint8)
    # upper bounds, allocated but mostly never touched: a data line takes at least 8 bytes
    # ('0 qid:0' and its newline), a pair at least 4 (' 1:0')
    rows, pairs = len(buf) // 8 + 1, len(buf) // 4 + 1
    label, qid, pairs_per_row = np.empty(rows), np.empty(rows, np.int64), np.empty(rows, np.int64)
    comment_start, line_end = np.empty(rows, np.int64), np.empty(rows, np.int64)
    index, value = np.empty(pairs, np.int64), np.empty(pairs)
    slow_text, slow_where = np.empty(len(buf) + 1, np.uint8), np.empty(rows + pairs, np.int64)
    lo, hi = labels if labels is not None else (0, 0)
    status, rows, pairs, n_slow, used = compiled.scan(
        compiled.padded(chunk), len(buf), limit, labels is not None, lo, hi, label, qid, index, value,
        pairs_per_row, comment_start, line_end, slow_text, slow_where)
    if status != 0:
        return None
    label, index, value = label[:rows], index[:pairs], value[:pairs]
    if n_slow:  # numbers outside the exact fast path: converted as the numpy parse converts them
        numbers = _parse_numbers(bytearray(slow_text[:used]))
        if numbers is None or len(numbers) != n_slow or not np.all(np.isfinite(numbers)):
            return None
        where = slow_where[:n_slow]
        in_label = where < 0
        label[-1 - where[in_label]] = numbers[in_label]
        value[where[~in_label]] = numbers[~in_label]
        slow_label = label[-1 - where[in_label]]
        if labels is not None and np.any((slow_label != np.floor(slow_label)) | (slow_label < labels[0])
                                         | (slow_label > labels[1])):
            return None
    return {
        "label": label,
        "qid": qid[:rows],
        "index": index,
        "value": value,
        "pairs_per_row": pairs_per_row[:rows],
        "docid": _docids(buf, comment_start[:rows], line_end[:rows]),
    }


def _parse_well_formed(chunk: memoryview, n_features: int | None, labels: tuple[int, int] | None) -> dict | None:
    """Arrays for whole lines of text, or None as soon as any line breaks the format."""
    buf = np.frombuffer(chunk, dtype=np.uint8)
    starts, ends = _line_bounds(buf)
    comment_start = _comment_starts(buf, ends)
    text = bytearray(chunk)  # a mutable copy: comments, colons and 'qid' get blanked in place
    work = np.frombuffer(text, dtype=np.uint8)
    work[_ranges(comment_start, ends)] = _SPACE

    field_start, field_end = _field_bounds(np.frombuffer(text.translate(_WS_TO_ONE), dtype=bool))
    first_field = np.searchsorted(field_start, starts)
    n_fields = np.diff(np.append(first_field, len(field_start)))
    is_data = n_fields > 0
    if np.any(n_fields == 1):  # a label and nothing else: no qid
        return None

    # every field but the first of a line holds exactly one colon, with text on both sides
    colons = np.flatnonzero(work == _COLON)
    later_field = np.ones(len(field_start), dtype=bool)
    later_field[first_field[is_data]] = False
    later_start, later_end = field_start[later_field], field_end[later_field]
    if len(colons) != len(later_start) or np.any(colons <= later_start) or np.any(colons >= later_end - 1):
        return None

    # the second field of each line is 'qid:<integer>'
    qid_field = first_field[is_data] + 1  # index into field_start
    qid_colon = np.flatnonzero(later_field).searchsorted(qid_field)  # index into colons
    qs = field_start[qid_field]
    if np.any(colons[qid_colon] != qs + 3) or np.any(
        (work[qs] != ord("q")) | (work[qs + 1] != ord("i")) | (work[qs + 2] != ord("d"))
    ):
        return None

    # qid and index text must be plain integers (a float parse would accept '1.0' or '1e3')
    negative_qid = work[colons[qid_colon] + 1] == ord("-")
    qid_from, qid_to = colons[qid_colon] + 1 + negative_qid, field_end[qid_field]
    pair_colon = np.ones(len(colons), dtype=bool)
    pair_colon[qid_colon] = False
    if not (_all_digits(work, qid_from, qid_to) and _all_digits(work, later_start[pair_colon], colons[pair_colon])):
        return None
    if np.any(qid_to - qid_from > MAX_QID_DIGITS):
        return None
    # exact integer qids (a float64 round trip would corrupt ids above 2**53)
    qid = np.where(negative_qid, -1, 1) * _span_integers(work, qid_from, qid_to)

    # blank the 'qid' letters and colons; what remains must be plain numbers, one per token
    work[colons] = _SPACE
    work[np.concatenate([qs, qs + 1, qs + 2])] = _SPACE
    if text.translate(None, _ALLOWED):
        return None
    per_line = 2 * (n_fields[is_data] - 1)  # label, qid, then index and value per pair
    tokens = _parse_numbers(text) if len(per_line) else np.zeros(0)
    if tokens is None or len(tokens) != per_line.sum() or not np.all(np.isfinite(tokens)):
        return None

    first_token = np.cumsum(per_line) - per_line
    is_pair_token = np.ones(len(tokens), dtype=bool)
    is_pair_token[first_token] = False
    is_pair_token[first_token + 1] = False
    index, value = tokens[is_pair_token].reshape(-1, 2).T
    pairs_per_row = n_fields[is_data] - 2
    if np.any(index < 1) or np.any(index > (MAX_INFERRED_FEATURES if n_features is None else n_features)):
        return None
    label = tokens[first_token]
    if labels is not None and np.any((label != np.floor(label)) | (label < labels[0]) | (label > labels[1])):
        return None
    if _has_duplicate_index(index, pairs_per_row):
        return None

    return {
        "label": label,
        "qid": qid,
        "index": index.astype(np.int64),
        "value": value,
        "pairs_per_row": pairs_per_row,
        "docid": _docids(buf, comment_start[is_data], ends[is_data]),
    }


def _line_bounds(buf: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Start of each line and position of its newline (or of the end, for a last unterminated line)."""
    ends = np.flatnonzero(buf == _NL)
    if len(buf) and buf[-1] != _NL:
        ends = np.append(ends, len(buf))
    return np.concatenate([[0], ends[:-1] + 1]).astype(np.int64), ends


def _comment_starts(buf: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Position of the first '#' of each line, or its end when it has none."""
    hashes = np.flatnonzero(buf == _HASH)
    line = np.searchsorted(ends, hashes)
    first = np.concatenate([[True], line[1:] != line[:-1]])[:len(hashes)]
    comment_start = ends.copy()
    comment_start[line[first]] = hashes[first]
    return comment_start


def _field_bounds(ws: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Start and end of each whitespace-separated field: where whitespace flips (one pass)."""
    flips = np.flatnonzero(ws[1:] != ws[:-1]) + 1
    head = [0] if len(ws) and not ws[0] else []
    tail = [len(ws)] if len(ws) and not ws[-1] else []
    edges = np.concatenate([head, flips, tail]).astype(np.int64)
    return edges[0::2], edges[1::2]


def _all_digits(work: np.ndarray, starts: np.ndarray, stops: np.ndarray) -> bool:
    """Whether every span ``work[start:stop]`` is non-empty and all digits.

    Loops over character position (a handful), not over spans: cheaper than a
    cumulative count over the whole buffer because index/qid text is short.
    """
    lengths = stops - starts
    if np.any(lengths < 1):
        return False
    for j in range(int(lengths.max(initial=0))):
        at = starts + j if j == 0 else starts[np.flatnonzero(lengths > j)] + j
        if np.any(work[at] - np.uint8(ord("0")) > 9):  # uint8 wraps, so bytes below '0' fail too
            return False
    return True


def _span_integers(work: np.ndarray, starts: np.ndarray, stops: np.ndarray) -> np.ndarray:
    """Decimal value of each all-digit span, accumulated one character position at a time."""
    value = np.zeros(len(starts), dtype=np.int64)
    for j in range(int((stops - starts).max(initial=0))):
        longer = np.flatnonzero(stops - starts > j)
        value[longer] = value[longer] * 10 + (work[starts[longer] + j] - ord("0"))
    return value


def _parse_numbers(text: bytearray) -> np.ndarray | None:
    """All whitespace-separated numbers in order, via pandas' C parser (one token per line)."""
    try:
        frame = pd.read_csv(
            io.BytesIO(text.translate(_WS_TO_NEWLINE)), header=None, dtype=np.float64, engine="c",
            na_filter=False, quoting=csv.QUOTE_NONE, skip_blank_lines=True,
        )
    except (ValueError, pd.errors.ParserError):
        return None
    if frame.shape[1] != 1:
        return None
    return frame.to_numpy().ravel()


def _has_duplicate_index(index: np.ndarray, pairs_per_row: np.ndarray) -> bool:
    step = np.diff(index)
    boundary = np.cumsum(pairs_per_row)[:-1] - 1  # diff positions that cross into the next row
    step[boundary[(boundary >= 0) & (boundary < len(step))]] = 1
    if np.all(step > 0):  # indices ascending within every row: no duplicates possible
        return False
    row = np.repeat(np.arange(len(pairs_per_row)), pairs_per_row)
    order = np.lexsort((index, row))
    same = (row[order][1:] == row[order][:-1]) & (index[order][1:] == index[order][:-1])
    return bool(np.any(same))


def _docids(buf: np.ndarray, comment_start: np.ndarray, line_end: np.ndarray) -> np.ndarray:
    """Value after 'docid =' in each line's comment, b'' where there is none (bytes array)."""
    if not len(comment_start) or not np.any(comment_start < line_end):
        return np.zeros(len(comment_start), dtype="S1")
    # gather every comment (without '#') followed by a newline, then split in C
    padded = np.append(buf, np.uint8(_NL))  # so line_end always points at a newline
    text = padded[_ranges(np.minimum(comment_start + 1, line_end), line_end + 1)].tobytes()
    comments = np.array(text.split(b"\n")[:-1], dtype=bytes)
    _, found, after = np.strings.partition(comments, b"docid")
    after = np.strings.lstrip(after)
    has = (found != b"") & np.strings.startswith(after, b"=")
    value = np.strings.lstrip(np.strings.partition(after, b"=")[2])
    for blank in (b" ", b"\t", b"\r"):  # the id ends at the first whitespace
        value = np.strings.partition(value, blank)[0]
    return np.where(has, value, b"")


# --- putting the chunks together ------------------------------------------------------------

def _assemble(parts: list[dict], path: str, n_features: int | None) -> RankData:
    label = np.concatenate([p["label"] for p in parts]) if parts else np.zeros(0)
    if not len(label):
        raise LetorFormatError(f"{path}: empty file (no data lines)")
    qid = np.concatenate([p["qid"] for p in parts])
    index = np.concatenate([p["index"] for p in parts])
    value = np.concatenate([p["value"] for p in parts])
    pairs_per_row = np.concatenate([p["pairs_per_row"] for p in parts])
    docid = np.concatenate([p["docid"] for p in parts])

    n, m = len(label), n_features if n_features is not None else int(index.max(initial=0))
    _check_fits_in_memory(path, n, m)
    if np.all(pairs_per_row == m) and np.all(index.reshape(n, m) == np.arange(1, m + 1)):
        X = value.reshape(n, m)  # dense file: every line lists 1..m in order
    else:
        X = np.zeros((n, m))
        X[np.repeat(np.arange(n), pairs_per_row), index - 1] = value

    order, offsets = offsets_from_qid(qid)
    if np.all(order[1:] > order[:-1]):  # queries already contiguous: skip the copies
        order = slice(None)
    docid = docid[order]
    missing = docid == b""
    docid = _decode(docid)
    if np.any(missing):
        docid = np.where(missing, positions(offsets).astype(str), docid)
    return RankData(X=X[order], y=label[order], qid=qid[order], docid=docid, offsets=offsets)


def _memory_bytes() -> int | None:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):  # not on every platform
        return None


def _check_fits_in_memory(path: str, n: int, m: int) -> None:
    need, have = 8 * n * m, _memory_bytes()
    if have is not None and need > have:
        raise LetorFormatError(
            f"{path}: {n:,} rows x {m:,} features would take {need / 2**30:,.1f} GiB as a dense matrix, more "
            f"than this machine's {have / 2**30:,.1f} GiB of memory; check n_features in the registry entry"
        )


def _decode(raw: np.ndarray) -> np.ndarray:
    try:
        return raw.astype(str)  # fast, ASCII only
    except UnicodeDecodeError:
        return np.char.decode(raw, "utf-8", "replace")


# --- slow diagnostic pass: only runs after the fast path found something wrong ---------------

def _raise_first_error(chunk: bytes, path: str, lines_before: int, n_features: int | None,
                       labels: tuple[int, int] | None = None) -> None:
    for number, line in enumerate(chunk.decode("utf-8", "replace").split("\n"), start=lines_before + 1):
        problem = _line_problem(line, n_features, labels)
        if problem:
            raise LetorFormatError(f"{path}:{number}: {problem}")
    raise LetorFormatError(f"{path}:{lines_before + 1}: malformed input in the block starting here")


def _line_problem(line: str, n_features: int | None, labels: tuple[int, int] | None = None) -> str | None:
    """What is wrong with one line, or None. The reference statement of the format."""
    fields = _ASCII_BLANKS.split(line.split("#", 1)[0].strip(_WHITESPACE.decode()))
    if fields == [""]:
        return None
    problem = _number_problem(fields[0], "label") or _label_problem(fields[0], labels)
    if problem:
        return problem
    if len(fields) < 2 or not fields[1].startswith("qid:"):
        return "missing qid (expected 'qid:<integer>' as the second field)"
    if not _INTEGER.fullmatch(fields[1][4:]):
        return f"qid must be an integer, got {_shown(fields[1][4:])}"
    if len(fields[1][4:].lstrip("-")) > MAX_QID_DIGITS:
        return f"qid {fields[1][4:]} has more than {MAX_QID_DIGITS} digits"
    seen: set[int] = set()
    for token in fields[2:]:
        index, colon, value = token.partition(":")
        if not colon or not index or not value:
            return f"bad token {_shown(token)} (expected index:value)"
        if not _INDEX.fullmatch(index) or int(index) < 1:
            return f"bad feature index {_shown(index)} in {_shown(token)} (must be an integer >= 1)"
        if n_features is not None and int(index) > n_features:
            return f"feature index {index} exceeds n_features={n_features}"
        if n_features is None and int(index) > MAX_INFERRED_FEATURES:
            return (f"feature index {index} is above {MAX_INFERRED_FEATURES:,}, the most read without a stated "
                    f"number of features; if the data really has that many, set n_features in its registry "
                    f"entry (else the index is a typo)")
        if int(index) in seen:
            return f"duplicate feature index {index}"
        seen.add(int(index))
        problem = _number_problem(value, f"value of feature {index}")
        if problem:
            return problem
    return None


def _shown(text: str) -> str:
    """A field as an error shows it: a short one as it is, a longer one only by its length (a
    file that is no LETOR file, such as /etc/passwd, would otherwise have its content echoed to
    the console and the log)."""
    return repr(text) if len(text) <= MAX_SHOWN_CHARS else f"of {len(text)} characters"


def _label_problem(text: str, labels: tuple[int, int] | None) -> str | None:
    if labels is None:
        return None
    value, (lo, hi) = float(text), labels
    if value != math.floor(value):
        return (f"label {text} is not an integer; this data set's labels are the integers {lo}..{hi} "
                f"(its registry entry's labels)")
    if not lo <= value <= hi:
        return (f"label {text} is outside this data set's label range {lo}..{hi} (its registry entry's labels); "
                f"fix the file, or widen labels in the registry entry if the scale really is larger")
    return None


def _number_problem(text: str, what: str) -> str | None:
    if text.lower().lstrip("+-") in _NONFINITE:
        return f"{what} is NaN or infinite ({_shown(text)})"
    if not _NUMBER.fullmatch(text):
        return f"non-numeric {what} {_shown(text)}" + (" (is this a LETOR file?)" if what == "label" else "")
    if not math.isfinite(float(text)):
        return f"{what} is NaN or infinite ({_shown(text)})"
    return None
