"""The LETOR 4.0 fold rotation: five disjoint parts S1..S5 of a data set's queries become five
folds; fold k trains on S_k, S_k+1, S_k+2, validates on S_k+3 and tests on S_k+4 (mod 5)."""

from __future__ import annotations

N_PARTS = 5
FOLDS = (1, 2, 3, 4, 5)


def fold_parts(fold: int) -> dict[str, list[int]]:
    """0-based part indices of each split of ``fold`` (1..5)."""
    if fold not in FOLDS:
        raise ValueError(f"fold must be one of {FOLDS}, got {fold!r}")
    k = fold - 1
    return {"train": [k % 5, (k + 1) % 5, (k + 2) % 5], "vali": [(k + 3) % 5], "test": [(k + 4) % 5]}


def fold_splits(parts: list, fold: int) -> dict:
    """Fold ``fold`` of five parts of one data class (``RankData`` or ``QAData``): each split is
    the concatenation of its parts, in rotation order."""
    if len(parts) != N_PARTS:
        raise ValueError(f"expected {N_PARTS} parts, got {len(parts)}")
    concat = type(parts[0]).concat
    return {split: concat([parts[i] for i in idx]) for split, idx in fold_parts(fold).items()}
