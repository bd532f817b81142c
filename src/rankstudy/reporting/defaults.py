"""What "default" means on a board: each method at rankstudy's defaults (``python -m rankstudy
list methods``), which for a ranker that wraps a library (LightGBM, XGBoost, CatBoost) are not
always the library's own (:class:`rankstudy.util.params.Param`'s ``library``): LightGBM's
LambdaMART learns at 0.05 here, at 0.1 in LightGBM; CatBoost's YetiRank gets l2_leaf_reg 3 here,
about 0 in CatBoost."""

from __future__ import annotations

from collections.abc import Mapping


def _same(default, library: str) -> bool:
    """Whether rankstudy's default is the library's own, as its text says ("0.1", "none")."""
    if default is None:
        return library == "none"
    try:
        return float(library) == float(default)
    except (TypeError, ValueError):
        return False


def differences(methods: Mapping[str, dict]) -> dict[str, tuple[str, list[tuple[str, object, str]]]]:
    """Per ranker kind of the untuned ``methods`` (config specs: ``kind``, ``params``; a spec with a
    ``tune`` key is a tuned method, whose defaults are only its first trial) that wraps a library:
    the library and its parameters whose rankstudy default is not the library's own, as (name,
    rankstudy's default, the library's own), leaving out those every such method of the kind sets."""
    from rankstudy.rankers.registry import RANKERS

    by_kind: dict[str, list[set]] = {}
    for spec in methods.values():
        if isinstance(spec, dict) and spec.get("kind") in RANKERS and not spec.get("tune"):
            by_kind.setdefault(spec["kind"], []).append(set(spec.get("params") or {}))
    out = {}
    for kind, given in by_kind.items():
        cls = RANKERS[kind]
        if not getattr(cls, "library", ""):
            continue
        set_by_all = set.intersection(*given)
        shown = [(name, param.default, param.library) for name, param in cls.parameters.items()
                 if param.library and name not in set_by_all and not _same(param.default, param.library)]
        if shown:
            out[kind] = (cls.library, shown)
    return out


def defaults_sentence(methods: Mapping[str, dict]) -> str:
    """The legend's sentence on the defaults of the board's methods; '' when none wraps a library."""
    found = differences(methods)
    if not found:
        return ""
    return ("Default: each method at rankstudy's defaults (python -m rankstudy list methods shows them beside the "
            "wrapped library's own), where they differ from the library's own (in brackets): "
            + "; ".join(f"{kind} ({library}) " + ", ".join(f"{name} {default!r} ({own})" for name, default, own in shown)
                        for kind, (library, shown) in found.items()) + ".")
