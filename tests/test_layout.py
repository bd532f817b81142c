"""The results layout's names: what two studies share and what keeps them apart."""

from __future__ import annotations

import pytest

from rankstudy.data.registry import load_registry
from rankstudy.pipeline import layout

REGISTRY = load_registry()
CONFIG = {"seed": 0, "synthetic": {"n_queries": 250}, "cleaning": {"drop_no_relevant": ["train"]},
          "evaluation": {"rel_threshold": 1}, "features": {"normalization": "zscore"}}


def test_generated_data_is_named_by_its_settings_and_files_by_their_name():
    base = layout.data_name("synthetic", REGISTRY["synthetic"], CONFIG)
    assert base.startswith("synthetic.")
    assert layout.data_name("synthetic", REGISTRY["synthetic"], {**CONFIG, "seed": 1}) != base
    assert layout.data_name("synthetic", REGISTRY["synthetic"], {**CONFIG, "synthetic": {"n_queries": 60}}) != base
    # the QA generator's settings do not touch the LETOR generator's data, nor data_root either
    assert layout.data_name("synthetic", REGISTRY["synthetic"],
                            {**CONFIG, "synthetic_qa": {"n_questions": 10}, "data_root": "/x"}) == base
    assert layout.data_name("OHSUMED", REGISTRY["OHSUMED"], {**CONFIG, "seed": 5}) == "OHSUMED"


def test_cleaning_names_depend_on_the_rules_in_use_only():
    name = layout.cleaning_name({"drop_no_relevant": ["train"], "chakrabarti": []}, 1)
    assert name == layout.cleaning_name({"drop_no_relevant": ["train"]}, 1.0)
    assert name.startswith("clean-") and name != layout.cleaning_name({"drop_no_relevant": ["train"]}, 2)
    assert layout.cleaning_name({"binarize": ["vali", "train"]}, 1) == layout.cleaning_name({"binarize": ["train", "vali"]}, 1)
    assert layout.cleaning_name({}, 1) == layout.cleaning_name({"chakrabarti": []}, 3) == "raw"


def test_norm_names_say_the_stored_dtype():
    assert layout.norm_name({"normalization": "querylevel"}) == "querylevel"
    assert layout.norm_name({"normalization": "zscore", "dtype": "float32"}) == "zscore-float32"


def test_a_study_owns_its_runs_and_shares_its_features():
    prot = layout.protocol("OHSUMED", REGISTRY["OHSUMED"], CONFIG)
    a = layout.study_paths("A", "OHSUMED", prot, "first", "RankSVM", fold=1)
    b = layout.study_paths("B", "OHSUMED", prot, "first", "RankSVM", fold=1)
    assert a["model"] != b["model"] and str(a["model"]).startswith("results/runs/A/OHSUMED/first/RankSVM/fold1/")
    assert a["features_dir"] == b["features_dir"] and a["meta"] == b["meta"]
    assert layout.log("train") == "results/logs/train/{study}/{dataset}/{featureset}/{method}/fold{fold}.log"


def test_a_system_label_splits_back_into_method_and_feature_set():
    assert layout.split_system_label(layout.system_label("CDN-full", "rho0.10")) == ("CDN-full", "rho0.10")
    assert layout.split_system_label("a [b] [first]") == ("a [b]", "first")
    with pytest.raises(ValueError, match="not 'method \\[featureset\\]'"):
        layout.split_system_label("ranknet")


def test_near_duplicate_options_name_a_new_cleaning_only_when_given_and_used():
    rules = {"chakrabarti": ["train"], "drop_no_relevant": ["train"]}
    plain = layout.cleaning_name(rules, 1)
    assert layout.cleaning_name({**rules, "near_duplicates": {}}, 1) == plain  # older folders keep their names
    side = layout.cleaning_name({**rules, "near_duplicates": {"side": "bad"}}, 1)
    assert side != plain and side != layout.cleaning_name({**rules, "near_duplicates": {"scope": "fold"}}, 1)
    without = {"drop_no_relevant": ["train"]}  # options of a rule not in use change nothing
    assert layout.cleaning_name({**without, "near_duplicates": {"side": "bad"}}, 1) == layout.cleaning_name(without, 1)
