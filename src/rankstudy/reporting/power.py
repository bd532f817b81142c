"""A data set's minimum detectable difference (MDD): one number per data set and metric, computed
here once and shown as it is by the comparison table (its ``(MDD)`` row and caption), the
leaderboard's line above each data set and the heat map's note under it.

Per tested pair of systems the pairs file holds ``mdd``: the smallest true mean paired difference
the two-sided paired t-test at alpha finds with probability :data:`POWER`, from the sd of the
pair's per-query differences (``significance.minimum_detectable_differences``), and
``mdd_family``, the same at Holm's strictest level alpha / m. The data set's MDD is their median
over the tested pairs of the metric: every pair of systems under ``report.compare: all_pairs``
(the leaderboard's), each system against the baseline otherwise.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

POWER = 0.8  # of the minimum detectable difference


@dataclass(frozen=True)
class DatasetPower:
    mdd: float  # the median over the tested pairs of their MDD at alpha (NaN without any)
    mdd_family: float  # ... at alpha / m
    n_pairs: int  # the pairs with an MDD


def dataset_power(pairs: pd.DataFrame, metric: str) -> DatasetPower:
    """The data set's MDD of ``metric`` from the tested pairs (rows with ``metric``, ``mdd``,
    ``mdd_family``: the pairs file, or the table's rows against the baseline); NaN where no pair
    has one (a pairs file written before the columns)."""
    if not {"mdd", "mdd_family"} <= set(pairs.columns):
        return DatasetPower(float("nan"), float("nan"), 0)
    part = pairs[pairs["metric"] == metric] if "metric" in pairs.columns else pairs
    mdd, family = part["mdd"].astype(float), part["mdd_family"].astype(float)
    return DatasetPower(float(mdd.median()) if mdd.notna().any() else float("nan"),
                        float(family.median()) if family.notna().any() else float("nan"),
                        int(mdd.notna().sum()))


def mdd_text(value: float) -> str:
    """An MDD as every output writes it: four decimals, ``–`` for none."""
    return "–" if np.isnan(value) else f"{value:.4f}"


def definition(alpha: float) -> str:
    """What "MDD" means, said once per document (the legend)."""
    return (f"MDD: the minimum detectable difference, the smallest true mean difference the two-sided paired "
            f"t-test at p < {alpha:g} finds with probability {POWER:g}, from the sd of a pair's per-query "
            f"differences; a data set's MDD is the median over its tested pairs of systems (at Holm's strictest "
            f"level alpha / m over the m pairs: mdd_family in the CSV files)")


def headline(power: DatasetPower, metric: str) -> str:
    """The data set's MDD in one sentence (the definition is the legend's), or '' where there is
    none or it is 0 (identical systems: 'below 0.0000' says nothing)."""
    if not power.mdd > 0:
        return ""
    return (f"MDD {mdd_text(power.mdd)} ({mdd_text(power.mdd_family)} at Holm's strictest level): differences in "
            f"{metric} below it cannot reliably be told apart on these test queries.")
