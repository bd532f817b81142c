"""read_letor against scikit-learn's SVMlight loader and against known generated data."""

from __future__ import annotations

import gzip
import re
from pathlib import Path

import numpy as np
import pytest
from sklearn.datasets import load_svmlight_file

from rankstudy.data import letor
from rankstudy.data.rankdata import RankData
from rankstudy.data.letor import LetorFormatError, check_disjoint_queries, read_letor


def write(path: Path, text: str, gz: bool = False) -> Path:
    data = text.encode()
    path.write_bytes(gzip.compress(data) if gz else data)
    return path


def sklearn_grouped(path: Path, n_features: int | None = None):
    """sklearn's arrays, reordered the way read_letor groups queries (first appearance, stable)."""
    X, y, qid = load_svmlight_file(str(path), query_id=True, n_features=n_features)
    first = {q: i for i, q in reversed(list(enumerate(qid)))}
    order = sorted(range(len(qid)), key=lambda i: (first[qid[i]], i))
    return X.toarray()[order], y[order], qid[order]


def generated_file(rng: np.random.Generator, n_rows: int, n_features: int, density: float):
    """Sparse LETOR text with queries scattered through the file, some docids, blank and
    comment-only lines, tabs; returns (text, X, y, qid, docid-or-None per line) in file order."""
    X = np.where(rng.random((n_rows, n_features)) < density, rng.normal(size=(n_rows, n_features)), 0.0)
    X[rng.random((n_rows, n_features)) < 0.05] *= 1e-300  # subnormal-ish and tiny magnitudes
    y = rng.integers(0, 3, n_rows).astype(float)
    qid = rng.choice([7, 300, 12, 45678], size=n_rows)  # interleaved, not contiguous
    docids = [f"D{i}-x" if rng.random() < 0.5 else None for i in range(n_rows)]
    lines = ["# leading comment line"]
    for i in range(n_rows):
        nz = np.flatnonzero(X[i])
        sep = "\t" if i % 3 == 0 else " "
        feats = sep.join(f"{j + 1}:{float(X[i, j])!r}" for j in nz)
        comment = f" #docid = {docids[i]} inc = 1 prob = 0.5" if docids[i] else (" # no id # 3:4 here" if i % 4 else "")
        lines.append(f"{y[i]:g} qid:{qid[i]}{sep}{feats}{comment}")
        if i % 10 == 0:
            lines.append("")
    return "\n".join(lines) + "\n", X, y, qid, docids


def expected_grouping(qid: np.ndarray) -> list[int]:
    first = {q: i for i, q in reversed(list(enumerate(qid)))}
    return sorted(range(len(qid)), key=lambda i: (first[qid[i]], i))


# --- real data -------------------------------------------------------------------------------

def test_mq2008_matches_sklearn_and_comment_docids(mq2008_dir):
    path = mq2008_dir / "Fold1" / "train.txt.gz"
    data = read_letor(path)
    X, y, qid = sklearn_grouped(path)
    assert data.X.shape == (9630, 46)
    np.testing.assert_array_equal(data.X, X)
    np.testing.assert_array_equal(data.y, y)
    np.testing.assert_array_equal(data.qid, qid)
    with gzip.open(path, "rt") as f:
        lines = f.read().splitlines()
    docids = np.array([re.search(r"#docid = (\S+)", line).group(1) for line in lines])
    file_qid = np.array([int(line.split()[1][4:]) for line in lines])
    np.testing.assert_array_equal(data.docid, docids[expected_grouping(file_qid)])
    assert data.docid[0] == "GX008-86-4444840"
    assert np.all(np.diff(data.offsets) > 0) and len(np.unique(data.query_ids)) == data.n_queries


def test_mq2008_folds_are_query_disjoint(mq2008_dir):
    fold = mq2008_dir / "Fold1"
    check_disjoint_queries({str(fold / f"{s}.txt.gz"): read_letor(fold / f"{s}.txt.gz", 46)
                            for s in ("train", "vali", "test")})


# --- generated data --------------------------------------------------------------------------

@pytest.mark.parametrize("gz", [False, True])
def test_generated_sparse_file_matches_truth_and_sklearn(tmp_path, gz):
    rng = np.random.default_rng(1)
    text, X, y, qid, docids = generated_file(rng, 300, 20, 0.3)
    path = write(tmp_path / ("g.txt.gz" if gz else "g.txt"), text, gz)
    data = read_letor(path, n_features=20)

    order = expected_grouping(qid)
    np.testing.assert_array_equal(data.X, X[order])
    np.testing.assert_array_equal(data.y, y[order])
    np.testing.assert_array_equal(data.qid, qid[order])
    assert list(data.query_ids) == list(dict.fromkeys(qid))  # first-appearance order
    # docid from the comment, else the 0-based position within the (merged) query
    within = {}
    expected_docid = []
    for i in order:
        position = within.get(qid[i], 0)
        within[qid[i]] = position + 1
        expected_docid.append(docids[i] if docids[i] else str(position))
    assert list(data.docid) == expected_docid

    sk_X, sk_y, sk_qid = sklearn_grouped(path, n_features=20)
    np.testing.assert_array_equal(data.X, sk_X)
    np.testing.assert_array_equal(data.y, sk_y)
    np.testing.assert_array_equal(data.qid, sk_qid)


def test_number_spellings_parse_like_strtod(tmp_path):
    values = ["1e-3", "+0.5", ".5", "5.", "-2", "1E+2", "0.1000000000000000055511151231257827",
              "2.2250738585072014e-308", "1.7976931348623157e308", "007"]
    text = "".join(f"{v} qid:1 1:{v} 2:{v}\n" for v in values)
    path = write(tmp_path / "n.txt", text)
    data = read_letor(path)
    expected = np.array([float(v) for v in values])
    np.testing.assert_array_equal(data.y, expected)
    np.testing.assert_array_equal(data.X, np.column_stack([expected, expected]))
    np.testing.assert_array_equal(data.X, sklearn_grouped(path)[0])


def test_random_roundtrip_values_are_exact(tmp_path):
    rng = np.random.default_rng(5)
    X = rng.normal(size=(200, 5)) * 10.0 ** rng.integers(-20, 20, size=(200, 5))
    text = "".join("0 qid:1 " + " ".join(f"{j + 1}:{float(v)!r}" for j, v in enumerate(row)) + "\n" for row in X)
    np.testing.assert_array_equal(read_letor(write(tmp_path / "r.txt", text)).X, X)


def test_gzip_is_detected_by_magic_bytes_not_suffix(tmp_path):
    text = "2 qid:5 1:0.25 3:1 #docid = a\n0 qid:5 2:0.5 #docid = b\n"
    plain_named_gz = write(tmp_path / "plain.gz", text)
    gz_named_txt = write(tmp_path / "packed.txt", text, gz=True)
    for path in (plain_named_gz, gz_named_txt):
        data = read_letor(path)
        np.testing.assert_array_equal(data.X, [[0.25, 0, 1], [0, 0.5, 0]])
        assert list(data.docid) == ["a", "b"]


def test_n_features_sets_width_and_yahoo_size_dims(tmp_path):
    rng = np.random.default_rng(2)
    text, X, *_ = generated_file(rng, 60, 700, 0.4)
    path = write(tmp_path / "y.txt", text)
    assert read_letor(path, n_features=700).X.shape == (60, 700)
    assert read_letor(path).X.shape[1] == np.flatnonzero(X.any(axis=0)).max() + 1
    wide = read_letor(path, n_features=705)
    np.testing.assert_array_equal(wide.X[:, :700], sklearn_grouped(path, 700)[0])
    assert not wide.X[:, 700:].any()


def test_dense_file_takes_the_same_values(tmp_path):
    X = np.round(np.random.default_rng(3).random((50, 8)), 4)
    text = "".join(f"{i % 3} qid:{i // 10} " + " ".join(f"{j + 1}:{v}" for j, v in enumerate(r)) + "\n"
                   for i, r in enumerate(X))
    data = read_letor(write(tmp_path / "d.txt", text))
    np.testing.assert_array_equal(data.X, X)
    assert list(data.query_lengths) == [10] * 5
    assert list(data.docid[:11]) == [str(k) for k in range(10)] + ["0"]


def test_negative_and_large_qids_are_exact(tmp_path):
    data = read_letor(write(tmp_path / "q.txt", "1 qid:-3 1:1\n0 qid:4 1:2\n2 qid:123456789012345678 1:3\n"))
    assert list(data.qid) == [-3, 4, 123456789012345678]
    np.testing.assert_array_equal(data.qid, sklearn_grouped(tmp_path / "q.txt")[2])


def test_crlf_and_missing_final_newline(tmp_path):
    path = write(tmp_path / "c.txt", "1 qid:1 1:0.5 #docid = z\r\n0 qid:1 2:1.5")
    data = read_letor(path)
    np.testing.assert_array_equal(data.X, [[0.5, 0], [0, 1.5]])
    assert list(data.docid) == ["z", "1"]


def test_small_chunks_give_the_same_result(tmp_path, monkeypatch):
    text, *_ = generated_file(np.random.default_rng(4), 200, 15, 0.3)
    path = write(tmp_path / "k.txt", text)
    whole = read_letor(path)
    monkeypatch.setattr(letor, "CHUNK_BYTES", 100)
    chunked = read_letor(path)
    for field in ("X", "y", "qid", "docid", "offsets"):
        np.testing.assert_array_equal(getattr(chunked, field), getattr(whole, field))


# --- malformed input -------------------------------------------------------------------------

GOOD = "1 qid:1 1:0.5 2:0.25"
MALFORMED = {
    "missing qid": ("0 1:0.5 2:0.1", "missing qid"),
    "label only": ("1", "missing qid"),
    "label and comment": ("1 # qid:1 1:0.5", "missing qid"),
    "qid not second": ("0 1:0.5 qid:1", "missing qid"),
    "qid text": ("0 qid:abc 1:0.5", "qid must be an integer"),
    "qid float": ("0 qid:1.5 1:0.5", "qid must be an integer"),
    "qid empty": ("0 qid: 1:0.5", "qid must be an integer"),
    "qid sign only": ("0 qid:- 1:0.5", "qid must be an integer"),
    "qid too long": ("0 qid:1234567890123456789 1:0.5", "more than 18 digits"),
    "label text": ("x qid:1 1:0.5", "non-numeric label"),
    "label with colon": ("1:2 qid:1 1:0.5", "non-numeric label"),
    "value text": ("0 qid:1 1:abc", "non-numeric value of feature 1"),
    "value two dots": ("0 qid:1 1:0.5 2:1.2.3", "non-numeric value of feature 2"),
    "value with comma": ("0 qid:1 1:0.5,2:0.3", "non-numeric value"),
    "double colon": ("0 qid:1 1:2:3", "non-numeric value"),
    "no colon": ("0 qid:1 1:0.5 7", "bad token '7'"),
    "empty value": ("0 qid:1 1:", "bad token"),
    "empty index": ("0 qid:1 :3", "bad token"),
    "float index": ("0 qid:1 1.5:0.3", "bad feature index"),
    "integral float index": ("0 qid:1 1.0:0.3", "bad feature index"),
    "text index": ("0 qid:1 a:0.3", "bad feature index"),
    "zero index": ("0 qid:1 0:0.3", "bad feature index"),
    "negative index": ("0 qid:1 -1:0.3", "bad feature index"),
    "duplicate index": ("0 qid:1 1:0.5 1:0.6", "duplicate feature index 1"),
    "duplicate unsorted": ("0 qid:1 2:0.5 1:0.3 2:0.1", "duplicate feature index 2"),
    "nan value": ("0 qid:1 1:nan", "NaN or infinite"),
    "inf value": ("0 qid:1 1:-Infinity", "NaN or infinite"),
    "overflow value": ("0 qid:1 1:1e999", "NaN or infinite"),
    "nan label": ("NaN qid:1 1:0.5", "label is NaN or infinite"),
}


@pytest.mark.parametrize("gz", [False, True])
@pytest.mark.parametrize("case", list(MALFORMED))
def test_malformed_line_is_named(tmp_path, case, gz):
    bad, fragment = MALFORMED[case]
    # the bad line is physical line 5: comment-only and blank lines still count
    text = "\n".join([GOOD, "# a comment", "", GOOD + " # docid = x", bad, GOOD]) + "\n"
    path = write(tmp_path / "bad.txt", text, gz)
    with pytest.raises(LetorFormatError) as err:
        read_letor(path)
    message = str(err.value)
    assert message.startswith(f"{path}:5: "), message
    assert fragment in message, message


@pytest.mark.parametrize("last", ["1", "1 # comment", "0 qid:1 1:"])
def test_malformed_last_line_without_newline(tmp_path, last):
    path = write(tmp_path / "end.txt", f"{GOOD}\n{last}")
    with pytest.raises(LetorFormatError, match=r"end\.txt:2: "):
        read_letor(path)


def test_error_line_number_in_a_later_chunk(tmp_path, monkeypatch):
    monkeypatch.setattr(letor, "CHUNK_BYTES", 50)
    text = "\n".join([GOOD] * 30 + ["0 qid:1 3:x"] + [GOOD] * 5) + "\n"
    path = write(tmp_path / "late.txt", text)
    with pytest.raises(LetorFormatError, match=r"late\.txt:31: non-numeric value of feature 3"):
        read_letor(path)


def test_index_above_n_features(tmp_path):
    path = write(tmp_path / "w.txt", f"{GOOD}\n0 qid:1 1:0.5 4:0.1\n")
    assert read_letor(path).n_features == 4
    with pytest.raises(LetorFormatError, match=r"w\.txt:2: feature index 4 exceeds n_features=3"):
        read_letor(path, n_features=3)


@pytest.mark.parametrize("text", ["", "\n\n", "# only a comment\n\n  \t\n#another"])
def test_empty_file(tmp_path, text):
    path = write(tmp_path / "e.txt", text)
    with pytest.raises(LetorFormatError) as err:
        read_letor(path)
    assert str(err.value) == f"{path}: empty file (no data lines)"


def test_check_disjoint_queries():
    def split(qids):
        qids = np.asarray(qids)
        return RankData(X=np.zeros((len(qids), 1)), y=np.zeros(len(qids)), qid=qids,
                        docid=np.zeros(len(qids)).astype(str), offsets=np.arange(len(qids) + 1))

    check_disjoint_queries({"a.txt": split([1, 2]), "b.txt": split([3]), "c.txt": split([4, 5])})
    with pytest.raises(LetorFormatError, match=r"^query 123 appears in both b\.txt and c\.txt$"):
        check_disjoint_queries({"a.txt": split([1, 2]), "b.txt": split([3, 123]), "c.txt": split([123, 4])})


# --- labels against the data set's range (the registry's `labels`) ---------------------------

@pytest.mark.parametrize("gz", [False, True])
@pytest.mark.parametrize("label, fragment", [
    ("1.5", "label 1.5 is not an integer; this data set's labels are the integers 0..2"),
    ("0.999", "label 0.999 is not an integer"),
    ("-1", "label -1 is outside this data set's label range 0..2"),
    ("3", "label 3 is outside this data set's label range 0..2"),
    ("1e9", "label 1e9 is outside"),
])
def test_labels_outside_the_range_are_named_with_file_and_line(tmp_path, gz, label, fragment):
    text = "\n".join([GOOD, "# comment", GOOD, f"{label} qid:1 1:0.3", GOOD]) + "\n"
    path = write(tmp_path / "l.txt", text, gz)
    with pytest.raises(LetorFormatError) as err:
        read_letor(path, labels=(0, 2))
    assert str(err.value).startswith(f"{path}:4: {fragment}"), str(err.value)
    assert "widen labels" in str(err.value) or "not an integer" in str(err.value)
    # without a range (a direct call), any finite label is read as before
    assert read_letor(path).y[2] == float(label)  # the third data row (line 2 is a comment)


def test_integral_labels_in_range_are_accepted_in_any_spelling(tmp_path):
    path = write(tmp_path / "ok.txt", "2.0 qid:1 1:1\n0 qid:1 1:2\n1e0 qid:2 1:3\n+2 qid:2 1:4\n")
    np.testing.assert_array_equal(read_letor(path, labels=(0, 2)).y, [2, 0, 1, 2])


def test_bad_label_in_a_later_chunk(tmp_path, monkeypatch):
    monkeypatch.setattr(letor, "CHUNK_BYTES", 50)
    path = write(tmp_path / "late.txt", "\n".join([GOOD] * 30 + ["4 qid:9 1:0.5"] + [GOOD] * 5) + "\n")
    with pytest.raises(LetorFormatError, match=r"late\.txt:31: label 4 is outside .* range 1\.\.2"):
        read_letor(path, labels=[1, 2])


def test_shown_name_replaces_the_path_in_messages(tmp_path):
    path = write(tmp_path / "x.txt", f"{GOOD}\n9 qid:1 1:0.5\n")
    with pytest.raises(LetorFormatError, match=r"^\{data_root\}/X/x\.txt:2: label 9"):
        read_letor(path, labels=(0, 2), shown="{data_root}/X/x.txt")


# --- feature width without n_features, and memory --------------------------------------------

@pytest.mark.parametrize("index", ["99999999999", "100001", "1" + "0" * 400])
def test_huge_feature_index_without_n_features_is_named_not_a_memory_error(tmp_path, index):
    path = write(tmp_path / "h.txt", f"{GOOD}\n0 qid:1 {index}:1.0\n")
    with pytest.raises(LetorFormatError) as err:
        read_letor(path)
    message = str(err.value)
    assert message.startswith(f"{path}:2: feature index {index} is above 100,000"), message
    assert "set n_features in its registry entry" in message
    with pytest.raises(LetorFormatError, match=r"h\.txt:2: feature index \d+ exceeds n_features=46"):
        read_letor(path, n_features=46)


def test_largest_inferred_width_is_read(tmp_path):
    path = write(tmp_path / "w.txt", f"0 qid:1 {letor.MAX_INFERRED_FEATURES}:1.5\n")
    data = read_letor(path)
    assert data.X.shape == (1, letor.MAX_INFERRED_FEATURES) and data.X[0, -1] == 1.5


def test_dense_matrix_larger_than_memory_is_refused(tmp_path, monkeypatch):
    monkeypatch.setattr(letor, "_memory_bytes", lambda: 1 << 20)  # a 1 MiB machine
    path = write(tmp_path / "m.txt", "".join(f"0 qid:{i} 1:1\n" for i in range(100)))
    assert read_letor(path, n_features=1000).X.shape == (100, 1000)  # 0.8 MB fits
    with pytest.raises(LetorFormatError, match=r"m\.txt: 100 rows x 2,000 features would take 0\.0 GiB.*n_features"):
        read_letor(path, n_features=2000)


def test_damaged_gzip_file_is_named(tmp_path):
    data = bytearray(gzip.compress(("1 qid:1 1:0.5 2:0.25\n" * 3000).encode()))
    for k in range(30, len(data) - 20, 5):
        data[k] ^= 0x55
    path = tmp_path / "d.txt.gz"
    path.write_bytes(bytes(data))
    with pytest.raises(LetorFormatError, match=r"d\.txt\.gz: damaged gzip file .*intact copy"):
        read_letor(path)
    path.write_bytes(gzip.compress(b"1 qid:1 1:0.5\n" * 100)[:-30])  # truncated
    with pytest.raises(LetorFormatError, match="damaged gzip file"):
        read_letor(path)
