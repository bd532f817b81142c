"""The sampler studies' report pieces: the sweep table (accuracy against a method parameter)
and the Delta smear per restart state."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from rankstudy.losses.swap_sampler import SamplerSettings
from rankstudy.reporting import sampler_studies


def test_sweep_table_lines_up_methods_by_their_parameter():
    per_query = pd.DataFrame([{"system": f"m{m} [first]", "fold": f, "qid": q, "map": m / 1000 + f / 10 + q / 100}
                              for m in (10, 50) for f in (1, 2) for q in (1, 2)]
                             + [{"system": "other [first]", "fold": 1, "qid": 1, "map": 0.5}])
    methods = {"m10": {"kind": "conditional", "params": {"loss": "convex_loss", "sample_size": 10}},
               "m50": {"kind": "conditional", "params": {"loss": "convex_loss", "sample_size": 50}},
               "other": {"kind": "linear", "params": {"loss": "ranknet"}}}
    table = sampler_studies.sweep_table(per_query, methods, ["first"], "sample_size", ["map"])
    assert table["value"].tolist() == [10, 50] and table["series"].nunique() == 1
    # fold means m / 1000 + f / 10 + 0.015 (mean of q / 100); their mean over folds 1 and 2
    np.testing.assert_allclose(table["map"], [0.165 + 0.01, 0.165 + 0.05])
    np.testing.assert_allclose(table["map_std"], np.std([0.115, 0.215], ddof=1))
    with pytest.raises(ValueError, match="restart_skew"):
        sampler_studies.sweep_table(per_query, methods, ["first"], "restart_skew", ["map"])


def test_delta_smear_tags_each_state_with_its_restart():
    labels = np.array([1, 0, 0, 0, 0, 1, 1, 0, 0, 0, 0, 0, 0, 0, 1], dtype=float)
    offsets = np.array([0, 5, 15])
    settings = SamplerSettings(sample_size=99, walk_length=10, restart_states=3, restart_skew=0.0, seed=1)
    smear = sampler_studies.delta_smear(labels, offsets, settings, "map")
    assert set(smear["restart"]) == {"best", "middle", "worst"}
    seeds = smear[smear["step"] == 0].groupby("restart")["delta"]
    assert seeds.max()["best"] == 0 and seeds.min()["worst"] > seeds.max()["middle"] > 0
    assert smear["delta"].between(0, 1).all() and len(smear) == 2 * 9 * 11
