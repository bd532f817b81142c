"""Which of our systems and metrics fills each cell of a paper's table (a study's `paper` entry:
rows x columns, with `system` and `metric` templates over their tokens). Plain data, no pandas:
the config check reads it before any job, when the Snakefile is parsed."""

from __future__ import annotations


def cell_records(spec: dict) -> list[dict]:
    """One dict per paper cell, rows then columns: its row and column labels, our system and
    our metric."""
    out = []
    for row, row_token in spec["rows"].items():
        for column, column_token in spec["columns"].items():
            tokens = {"row": row_token, "column": column_token}
            out.append({"row": str(row), "column": str(column),
                        "system": spec["system"].format(**tokens),
                        "metric": spec.get("metric", "{column}").format(**tokens)})
    return out


def paper_systems(spec: dict) -> list[str]:
    """The systems a paper layout's rows name (``method [featureset]``), in row order."""
    if not (spec.get("rows") and spec.get("columns")):
        return []
    return list(dict.fromkeys(cell["system"] for cell in cell_records(spec)))
