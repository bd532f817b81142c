"""Looking a name up in a registry (a dict from name to implementation), with an error that
lists the valid names."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TypeVar

T = TypeVar("T")


def lookup(table: Mapping[str, T], name: str, what: str) -> T:
    """``table[name]``, or a ValueError like "unknown loss 'x'; valid: a, b, c"."""
    try:
        return table[name]
    except (KeyError, TypeError):
        raise ValueError(f"unknown {what} {name!r}; valid: {', '.join(sorted(table))}") from None
