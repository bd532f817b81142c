"""The compiled LETOR scan (numba) against the numpy parse and against float(), token by token."""

from __future__ import annotations

import gzip
import sys

import numpy as np
import pytest

import rankstudy.data
from rankstudy.data import letor
from rankstudy.data.letor import LetorFormatError, read_letor

pytest.importorskip("numba")

FIELDS = ("label", "qid", "index", "value", "pairs_per_row", "docid")


def compiled(text: bytes, n_features=None, labels=None):
    return letor._parse_compiled(memoryview(text), n_features, labels)


def numpy_parse(text: bytes, n_features=None, labels=None):
    return letor._parse_well_formed(memoryview(text), n_features, labels)


def assert_same_parts(a: dict, b: dict) -> None:
    for field in FIELDS:
        x, y = a[field], b[field]
        assert x.dtype == y.dtype or field == "docid", (field, x.dtype, y.dtype)
        if x.dtype.kind == "f":  # bit for bit: -0.0 and 0.0 differ
            np.testing.assert_array_equal(x.view(np.int64), y.view(np.int64), err_msg=field)
        else:
            np.testing.assert_array_equal(x, y, err_msg=field)


def awkward_numbers(rng: np.random.Generator, size: int) -> list[str]:
    """Spellings of numbers on both sides of the fast path (15-18 digits, exponents near 22)."""
    spellings = [
        lambda: repr(float(rng.normal() * 10.0 ** rng.integers(-30, 30))),  # up to 17 digits
        lambda: f"{rng.normal():.{rng.integers(0, 20)}f}",
        lambda: f"{rng.normal() * 10.0 ** rng.integers(-25, 25):.{rng.integers(0, 17)}e}",
        lambda: f"{rng.normal():+.6g}",
        lambda: str(int(rng.integers(0, 10 ** 18))),
        lambda: str(int(rng.integers(0, 2 ** 53 + 10))) + rng.choice(["", "e22", "e-22", "e23", "E-23", "."]),
        lambda: "." + str(int(rng.integers(0, 10 ** 8))),
        lambda: str(int(rng.integers(0, 1000))) + ".",
        lambda: "0" * int(rng.integers(1, 25)) + "." + "0" * int(rng.integers(0, 10)) + str(int(rng.integers(0, 99))),
        lambda: (rng.choice(["-", "+", ""]) + str(int(rng.integers(1, 10 ** 15)))
                 + "e" + str(int(rng.integers(-330, 290)))),  # finite: 15 digits and e289 stay below 1.8e308
        lambda: rng.choice(["0", "-0", "+0", "0.0", "-0.0", "0e999", "-0e-999", "1e-400", "9007199254740993",
                            "9007199254740992", "123456789012345678", "1234567890123456789", "0.1e1", "1E+2"]),
    ]
    return [spellings[int(rng.integers(len(spellings)))]() for _ in range(size)]


def random_file(rng, n_rows, n_features, *, comments=True, crlf=False, final_newline=True, numbers=None):
    """LETOR text with awkward numbers; returns (text, the value tokens in order)."""
    tokens = []
    lines = ["# header"] if comments else []
    for row in range(n_rows):
        features = np.sort(rng.choice(np.arange(1, n_features + 1), size=int(rng.integers(0, n_features + 1)),
                                      replace=False))
        if rng.random() < 0.2:
            rng.shuffle(features)  # unsorted indices are allowed (duplicates are not)
        values = (numbers or awkward_numbers)(rng, len(features))
        tokens += values
        sep = rng.choice([" ", "\t", "  ", " \t"])
        line = sep.join([str(int(rng.integers(0, 5))), f"qid:{rng.integers(-3, 10 ** 6)}"]
                        + [f"{f}:{v}" for f, v in zip(features, values)])
        if comments and rng.random() < 0.7:
            line += rng.choice([f" #docid = d{row} inc = 1", "#x 3:4 # qid:9", f"\t# docid=  id{row}\tmore"])
        lines.append(line + rng.choice(["", " ", "\t"]))
        if comments and rng.random() < 0.1:
            lines.append(rng.choice(["", "   ", "# only a comment"]))
    text = ("\r\n" if crlf else "\n").join(lines) + (("\r\n" if crlf else "\n") if final_newline else "")
    return text.encode(), tokens


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("comments, crlf, final_newline",
                         [(True, False, True), (False, False, True), (True, True, True), (False, True, False),
                          (True, False, False)])
def test_compiled_scan_equals_numpy_parse(seed, comments, crlf, final_newline):
    rng = np.random.default_rng(seed)
    text, tokens = random_file(rng, 60, 12, comments=comments, crlf=crlf, final_newline=final_newline)
    fast, slow = compiled(text), numpy_parse(text)
    assert fast is not None and slow is not None
    assert_same_parts(fast, slow)
    # and every value is what float() gives for its token
    expected = np.array([float(t) for t in tokens])
    np.testing.assert_array_equal(fast["value"].view(np.int64), expected.view(np.int64))


def test_every_fast_path_number_is_float_of_its_text():
    """Clinger's fast path (<= 2**53, 10**-22..10**22) hit directly: no number left to the slow path."""
    rng = np.random.default_rng(11)
    mantissas = rng.integers(0, 2 ** 53, 20000, endpoint=True)
    mantissas[::3] //= 10 ** rng.integers(0, 15, len(mantissas[::3]))
    tokens = []
    for m in mantissas:
        digits, point = str(int(m)), int(rng.integers(0, 23))
        if point and point < len(digits):
            text = digits[:-point] + "." + digits[-point:]
        else:
            text = digits + rng.choice(["", f"e{rng.integers(-22, 23)}", f"E+{rng.integers(0, 23)}", "."])
        tokens.append(rng.choice(["", "-", "+"]) + text)
    text = "".join(f"1 qid:1 1:{t}\n" for t in tokens).encode()
    fast = compiled(text)
    assert fast is not None
    expected = np.array([float(t) for t in tokens])
    np.testing.assert_array_equal(fast["value"].view(np.int64), expected.view(np.int64))
    assert_same_parts(fast, numpy_parse(text))


def test_labels_are_parsed_and_checked_the_same_way():
    text = b"2.0 qid:1 1:1\n0 qid:1 1:2\n1e0 qid:2 1:3\n+2 qid:2 1:4\n1.00000000000000000000 qid:3 1:5\n"
    assert_same_parts(compiled(text, labels=(0, 2)), numpy_parse(text, labels=(0, 2)))
    for bad in (b"3", b"1.5", b"-1", b"2.50000000000000000001e0", b"3.00000000000000000000"):
        line = bad + b" qid:1 1:1\n"
        assert compiled(text + line, labels=(0, 2)) is None
        assert numpy_parse(text + line, labels=(0, 2)) is None


def test_duplicate_and_out_of_range_indices_are_refused():
    assert compiled(b"1 qid:1 2:1 1:1 3:1\n0 qid:1 2:1 1:1 3:1\n") is not None  # unsorted, no duplicate
    for line in (b"1 qid:1 2:1 1:1 2:1\n", b"1 qid:1 0:1\n", b"1 qid:1 5:1\n", b"1 qid:1 00000000005:1\n",
                 b"1 qid:1 " + b"9" * 400 + b":1\n"):
        assert compiled(line, n_features=4) is None
        assert numpy_parse(line, n_features=4) is None


@pytest.mark.parametrize("fragment_line", [
    "0 1:0.5 2:0.1", "1", "1 # qid:1 1:0.5", "0 1:0.5 qid:1", "0 qid:abc 1:0.5", "0 qid:1.5 1:0.5", "0 qid: 1:0.5",
    "0 qid:- 1:0.5", "0 qid:1234567890123456789 1:0.5", "x qid:1 1:0.5", "1:2 qid:1 1:0.5", "0 qid:1 1:abc",
    "0 qid:1 1:0.5 2:1.2.3", "0 qid:1 1:0.5,2:0.3", "0 qid:1 1:2:3", "0 qid:1 1:0.5 7", "0 qid:1 1:", "0 qid:1 :3",
    "0 qid:1 1.5:0.3", "0 qid:1 1.0:0.3", "0 qid:1 a:0.3", "0 qid:1 0:0.3", "0 qid:1 -1:0.3", "0 qid:1 1:0.5 1:0.6",
    "0 qid:1 1:nan", "0 qid:1 1:-Infinity", "0 qid:1 1:1e999", "NaN qid:1 1:0.5", "0 qid:1 1:1e", "0 qid:1 1:1e+",
    "0 qid:1 1:.", "0 qid:1 1:+", "0 QID:1 1:1", "0 qid:+1 1:1", "0 qid:1 1:0x10", "0 qid:1 1:1_000", "0 qid:1 1:\x00",
    "0 qid:1 1:1\x00", "0\x00 qid:1 1:1", "0 qid:1 1:1é",
])
def test_malformed_lines_are_refused_and_named_as_before(tmp_path, fragment_line):
    good = "1 qid:1 1:0.5 2:0.25"
    text = "\n".join([good, "# a comment", "", good + " # docid = x", fragment_line, good]) + "\n"
    assert compiled(text.encode()) is None
    path = tmp_path / "bad.txt"
    path.write_bytes(text.encode())
    with pytest.raises(LetorFormatError, match=rf"^{path}:5: "):
        read_letor(path)


def test_mutated_lines_are_refused_or_read_exactly_as_numpy_reads_them():
    """Random edits of good lines: the scan may refuse what numpy reads, never read it differently."""
    rng = np.random.default_rng(3)
    alphabet = list("0123456789.+-eE: \t\r#qid\x00xn") + [":", " ", "."]
    good = b"1 qid:7 1:0.5 2:-1.25e-3 3:7 #docid = a\n"
    refused = accepted = 0
    for _ in range(3000):
        line = bytearray(good)
        for _ in range(int(rng.integers(1, 4))):
            at, op = int(rng.integers(len(line) - 1)), rng.integers(3)
            char = alphabet[int(rng.integers(len(alphabet)))].encode()
            if op == 0:
                line[at:at + 1] = char
            elif op == 1:
                line[at:at] = char
            else:
                del line[at]
        text = good + bytes(line) + good
        fast, slow = compiled(text, n_features=10), numpy_parse(text, n_features=10)
        if fast is None:
            refused += slow is not None
            continue
        accepted += 1
        assert slow is not None, bytes(line)
        assert_same_parts(fast, slow)
    assert accepted > 300 and refused < 30, (accepted, refused)  # 785 and 0 when written


def test_files_read_the_same_with_and_without_numba(tmp_path, monkeypatch):
    rng = np.random.default_rng(7)
    text, _ = random_file(rng, 300, 30)
    path = tmp_path / "f.txt.gz"
    path.write_bytes(gzip.compress(text))
    with_numba = read_letor(path, n_features=30)

    monkeypatch.setitem(sys.modules, "numba", None)  # 'import numba' now raises ImportError
    monkeypatch.delitem(sys.modules, "rankstudy.data.letor_numba", raising=False)
    monkeypatch.delattr(rankstudy.data, "letor_numba", raising=False)  # else 'from ... import' finds it
    assert letor._compiled_scan() is None
    without = read_letor(path, n_features=30)
    for field in ("X", "y", "qid", "docid", "offsets"):
        np.testing.assert_array_equal(getattr(with_numba, field), getattr(without, field))
    bad = tmp_path / "g.txt"
    bad.write_bytes(b"1 qid:1 1:1\n\n1 qid:1 2:1 2:1\n")
    with pytest.raises(LetorFormatError, match=r"g\.txt:3: duplicate feature index 2"):
        read_letor(bad)


def test_small_chunks_mix_compiled_and_numpy_parts(tmp_path, monkeypatch):
    """A chunk the scan refuses is read by numpy, the others compiled: the same result."""
    lines = [f"{i % 3} qid:{i // 7} 1:{i / 3!r} 2:{i} #docid = {i}" for i in range(200)]
    path = tmp_path / "m.txt"
    path.write_text("\n".join(lines) + "\n")
    monkeypatch.setattr(letor, "CHUNK_BYTES", 300)
    scan, calls = letor._parse_compiled, []

    def every_other(chunk, n_features, labels):
        calls.append(len(calls))
        return scan(chunk, n_features, labels) if len(calls) % 2 else None

    monkeypatch.setattr(letor, "_parse_compiled", every_other)
    data = read_letor(path)
    assert len(calls) > 10
    monkeypatch.setattr(letor, "_compiled_scan", lambda: None)
    reference = read_letor(path)
    for field in ("X", "y", "qid", "docid", "offsets"):
        np.testing.assert_array_equal(getattr(data, field), getattr(reference, field))


def test_mq2008_compiled_equals_numpy_on_every_file(mq2008_dir):
    files = sorted(mq2008_dir.glob("Fold*/*.txt.gz")) + sorted(mq2008_dir.glob("S*.txt.gz"))
    assert files
    for path in files:
        raw = gzip.decompress(path.read_bytes())
        fast, slow = compiled(raw, n_features=46, labels=(0, 2)), numpy_parse(raw, n_features=46, labels=(0, 2))
        assert fast is not None and slow is not None, path
        assert_same_parts(fast, slow)
