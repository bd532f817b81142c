"""Atomic file writes: write beside the target, then rename, so a failed job never leaves a
half-written output that a later run (or a person) could mistake for a finished one."""

from __future__ import annotations

import json
import os
import tempfile
from contextlib import contextmanager
from pathlib import Path


def _current_umask() -> int:
    # os.umask can only be read by setting it; set it straight back
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


@contextmanager
def atomic_path(path: str | os.PathLike, suffix: str = ""):
    """Yield a temporary path in the target's folder; rename it onto ``path`` on success.

    The file gets the mode a plain ``open(path, "w")`` would give (0666 minus the umask):
    mkstemp creates it 0600, which would hide results from the rest of a group."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=f".tmp{suffix}")
    os.close(fd)
    try:
        yield Path(tmp)
        os.chmod(tmp, 0o666 & ~_current_umask())
        os.replace(tmp, path)
    finally:
        Path(tmp).unlink(missing_ok=True)


def write_text(path: str | os.PathLike, text: str) -> Path:
    with atomic_path(path) as tmp:
        tmp.write_text(text, encoding="utf-8")
    return Path(path)


def write_json(path: str | os.PathLike, obj) -> Path:
    return write_text(path, json.dumps(obj, indent=2, sort_keys=True, default=_jsonable) + "\n")


def _jsonable(value):
    if hasattr(value, "tolist"):  # numpy scalars and arrays
        return value.tolist()
    if isinstance(value, Path):
        return str(value)
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")


class DamagedFile(ValueError):
    """A results file a job reads cannot be read as what it should be (cut short, overwritten);
    the message names it and what to do."""


def read_json(path: str | os.PathLike):
    try:
        return json.loads(Path(path).read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise DamagedFile(f"{path}: damaged, not valid JSON ({exc}); delete it and run again (Snakemake "
                          f"makes it anew, with the jobs that depend on it)") from None


def write_rows(rows: list[dict], path: str | os.PathLike) -> Path:
    """Rows of plain values (dicts, one key per column, in the first row's order) -> CSV
    atomically, as pandas writes them (None as an empty field), without importing pandas."""
    import csv

    with atomic_path(path) as tmp, open(tmp, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(dict.fromkeys(k for row in rows for k in row)))
        writer.writeheader()
        writer.writerows(rows)
    return Path(path)


def format_columns(columns: dict, sep: str = ",", header: bool = True, float_format: str = "%.17g") -> str:
    """Equal-length columns (``{name: values}``) as delimited text, as pandas' ``to_csv(index=False)``
    writes them: floats through ``float_format``, NaN as an empty field, a text field holding the
    separator or a quote quoted; formatted a column at a time, so no loop over rows."""
    import numpy as np

    lines = None
    for values in columns.values():
        values = np.asarray(values)
        if values.dtype.kind == "f":
            text = np.char.mod(float_format, values)
            text = np.where(np.isnan(values), "", text)
        else:
            text = values.astype(str)
            if values.dtype.kind in "OUS":
                awkward = (np.char.find(text, sep) >= 0) | (np.char.find(text, '"') >= 0) | (np.char.find(text, "\n") >= 0)
                if awkward.any():
                    quoted = np.char.add(np.char.add('"', np.char.replace(text, '"', '""')), '"')
                    text = np.where(awkward, quoted, text)
        lines = text if lines is None else np.char.add(np.char.add(lines, sep), text)
    rows = [] if lines is None else lines.tolist()
    if header:
        rows.insert(0, sep.join(columns))
    return "".join(row + "\n" for row in rows)


def write_columns(columns: dict, path: str | os.PathLike, sep: str = ",", header: bool = True,
                  float_format: str = "%.17g") -> Path:
    """Columns -> CSV/TSV atomically (:func:`format_columns`), without importing pandas."""
    with atomic_path(path) as tmp:
        Path(tmp).write_text(format_columns(columns, sep, header, float_format))
    return Path(path)


def write_csv(frame, path: str | os.PathLike, **kwargs) -> Path:
    """pandas DataFrame -> CSV/TSV atomically (sep and other options passed through)."""
    with atomic_path(path) as tmp:
        frame.to_csv(tmp, index=False, **kwargs)
    return Path(path)
