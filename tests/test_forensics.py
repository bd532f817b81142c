"""Protocol forensics: variant configs, and how the moves and the closest variant are read."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from rankstudy.pipeline import forensics as pf
from rankstudy.reporting import forensics as rf
from rankstudy.reporting import scorecard as sc

BASE = {
    "study": "paper-fig1",
    "datasets": ["OHSUMED"],
    "cleaning": {"chakrabarti": ["train", "vali", "test"], "drop_no_relevant": ["train"]},
    "features": {"normalization": "querylevel"},
    "methods": {"SVMmap": {"kind": "structsvm", "params": {"loss": "svm_map"}, "grid": {"C": [0.1, 1.0]}},
                "McRank": {"kind": "mcrank", "params": {"n_estimators": 30}},
                "RankSVM": {"kind": "linear", "params": {"loss": "ranksvm"}}},
    "paper": {"reference": "x.csv"},
    "report": {"baseline": "RankSVM", "sweep": {"parameter": "C"}},
}


def test_a_variant_keeps_the_named_methods_and_merges_its_fragment():
    spec = {"choice": "cleaning", "set": {"cleaning": {"near_duplicates": {"side": "bad"}}},
            "each_method": {"grid": {"C": [0.01, 100.0]}}}
    config = pf.variant_config(BASE, ["SVMmap", "McRank"], "side-bad", spec, "scorecard.forensics.bases.paper-fig1")
    assert config["study"] == "paper-fig1.side-bad"
    assert list(config["methods"]) == config["run_methods"] == ["SVMmap", "McRank"]
    assert config["cleaning"] == {"chakrabarti": ["train", "vali", "test"], "drop_no_relevant": ["train"],
                                  "near_duplicates": {"side": "bad"}}
    assert config["methods"]["SVMmap"]["grid"] == {"C": [0.01, 100.0]}
    assert "grid" not in config["methods"]["McRank"]  # a grid key only where the method has it
    assert config["report"]["baseline"] == "SVMmap"  # RankSVM is not rerun
    assert "paper" not in config and "datasets" not in config and "sweep" not in config["report"]
    assert BASE["cleaning"] == {"chakrabarti": ["train", "vali", "test"], "drop_no_relevant": ["train"]}  # untouched
    assert pf.variant_study("paper-fig1", pf.AS_STUDY) == "paper-fig1"


def test_a_variant_of_a_method_the_study_lacks_names_the_key():
    with pytest.raises(ValueError, match=r"scorecard.forensics.bases.paper-fig1: methods \['DORM'\]"):
        pf.variant_config(BASE, ["DORM"], "v", {"choice": "c"}, "scorecard.forensics.bases.paper-fig1")


def cell(row: str, published: float) -> sc.Cell:
    return sc.Cell("paper Fig 1", "paper-fig1", row, "NDCG@10", f"{row} [first]", "ndcg@10", published)


def frame_of(values: dict[tuple[str, str], float]) -> pd.DataFrame:
    """Rows of two cells under three variants; each cell's per-query values are its number +- 0.01."""
    published = {"A": 0.60, "B": 0.50}
    choices = {pf.AS_STUDY: "as configured", "side-bad": "cleaning", "zscore": "normalisation"}
    rows = []
    for (row, variant), mean in values.items():
        per_fold = {f: np.array([mean - 0.01, mean + 0.01] * 20) for f in (1, 2)}
        rows.append(rf.variant_row(cell(row, published[row]), variant, choices[variant], variant, per_fold, True,
                                   200, 0, 0.95))
    return pd.DataFrame(rows, columns=rf.COLUMNS)


def test_moves_and_the_closest_variant():
    frame = frame_of({("A", pf.AS_STUDY): 0.50, ("A", "side-bad"): 0.60, ("A", "zscore"): 0.45,
                      ("B", pf.AS_STUDY): 0.50, ("B", "side-bad"): 0.52, ("B", "zscore"): 0.40})
    moved = rf.moves(frame)
    np.testing.assert_allclose(moved["side-bad"].to_numpy(), [0.10, 0.02], atol=1e-12)
    np.testing.assert_allclose(moved["zscore"].to_numpy(), [-0.05, -0.10], atol=1e-12)
    explained = rf.explain(frame).set_index("row")
    assert explained.loc["A", "as_study_verdict"] == "below"
    assert explained.loc["A", "closest"] == "side-bad" and explained.loc["A", "closest_verdict"] == "reproduced"
    assert explained.loc["A", "closest_move"] == pytest.approx(0.10)
    assert explained.loc["B", "as_study_verdict"] == "reproduced"
    assert explained.loc["B", "closest"] == "none closer"  # nothing is nearer than 0.50 itself
    assert "normalisation: -0.100 (zscore)" in explained.loc["B", "moves"]
    assert "1 more under one variant" in rf.summary_line(rf.explain(frame))


def test_nan_queries_are_left_out_and_the_documents_render():
    frame = frame_of({("A", pf.AS_STUDY): 0.5, ("A", "zscore"): 0.55, ("B", pf.AS_STUDY): 0.5, ("B", "zscore"): 0.5})
    with_nan = rf.variant_row(cell("A", 0.6), "zscore", "normalisation", "z", {1: np.array([0.5, np.nan, 0.7])},
                              True, 100, 0, 0.95)
    assert with_nan["ours"] == pytest.approx(0.6) and with_nan["n_queries"] == 2
    assert "| paper Fig 1 | A / NDCG@10 |" in rf.to_markdown(frame, "t")
    assert "<table" in rf.to_html(frame, "t", "f.png") and 'src="f.png"' in rf.to_html(frame, "t", "f.png")
    fig = rf.figure(frame, "t")
    assert len(fig.axes[0].get_yticklabels()) == 2
    with pytest.raises(ValueError, match="as-study"):
        rf.moves(frame[frame["variant"] != pf.AS_STUDY])
