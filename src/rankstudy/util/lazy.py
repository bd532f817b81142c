"""Registries whose implementations are imported when first used, so that a job imports only
the kinds it runs (a train job of a linear ranker does not pay for LightGBM, SciPy's QP
solvers or JAX)."""

from __future__ import annotations

import importlib
from typing import Any


def load(path: str) -> Any:
    """The object a ``"package.module:attribute"`` path names."""
    module, _, attribute = path.partition(":")
    return getattr(importlib.import_module(module), attribute)


class LazyRegistry(dict):
    """A dict from name to implementation whose values may be given as ``"module:attribute"``
    paths: reading one imports it (once) and keeps the object in its place. Listing the names
    imports nothing."""

    def __getitem__(self, name):
        value = super().__getitem__(name)
        if isinstance(value, str):
            value = load(value)
            super().__setitem__(name, value)
        return value

    def get(self, name, default=None):
        return self[name] if name in self else default

    def values(self):
        return [self[name] for name in self]

    def items(self):
        return [(name, self[name]) for name in self]
