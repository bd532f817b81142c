"""The named conventions ``letor3`` and ``letor4`` (rankstudy.evaluation.conventions) against a
transcription of LETOR's evaluation scripts, Eval-Score-3.0.pl and Eval-Score-4.0.pl (Jun Xu and
Tie-Yan Liu), written here as plain loops over one query at a time, the way the Perl does it; it
shares no code with the library. Plus small cases worked by hand that pin each convention."""

from __future__ import annotations

import functools
import math

import numpy as np
import pytest

from rankstudy.evaluation import conventions

# %hsNdcgRelScore and %hsPrecisionRel of both scripts
NDCG_REL_SCORE = {0: 0, 1: 1, 2: 3}
PRECISION_REL = {0: 0, 1: 1, 2: 1}


# --- the transcription (one query: its labels and predictions in file order) ---

def perl_rates(labels, preds):
    """EvalQuery: the documents in file order (@tmpDid), then sorted by
    ``$pred{$b} <=> $pred{$a}``; Perl's sort (mergesort, 5.8 on) is stable, so ties keep file order."""
    tmp_did = list(range(len(labels)))
    docids = sorted(tmp_did, key=functools.cmp_to_key(lambda a, b: (preds[b] > preds[a]) - (preds[b] < preds[a])))
    return [labels[d] for d in docids]


def precision_at_n_3(top_n, rates):
    prec, num_relevant = [], 0
    i = 0
    while i < top_n and i < len(rates):
        if PRECISION_REL[rates[i]] == 1:
            num_relevant += 1
        prec.append(num_relevant / (i + 1))
        i += 1
    return prec


def precision_at_n_4(top_n, rates):
    prec, num_relevant = [], 0
    for i in range(top_n):
        r = rates[i] if i < len(rates) else 0  # "the hole as irrelevant"
        if PRECISION_REL[r] == 1:
            num_relevant += 1
        prec.append(num_relevant / (i + 1))
    return prec


def average_precision(rates):
    num_relevant, avg = 0, 0.0
    for i in range(len(rates)):
        if PRECISION_REL[rates[i]] == 1:
            num_relevant += 1
            avg += num_relevant / (i + 1)
    return 0.0 if num_relevant == 0 else avg / num_relevant


def dcg_3(top_n, rates):
    dcg = [NDCG_REL_SCORE[rates[0]]]
    i = 1
    while i < top_n and i < len(rates):
        if i < 2:
            dcg.append(dcg[i - 1] + NDCG_REL_SCORE[rates[i]])
        else:
            dcg.append(dcg[i - 1] + NDCG_REL_SCORE[rates[i]] * math.log(2.0) / math.log(i + 1.0))
        i += 1
    return dcg


def dcg_4(top_n, rates):
    dcg = [NDCG_REL_SCORE[rates[0]]]
    for i in range(1, top_n):
        r = rates[i] if i < len(rates) else 0
        if i < 2:
            dcg.append(dcg[i - 1] + NDCG_REL_SCORE[r])
        else:
            dcg.append(dcg[i - 1] + NDCG_REL_SCORE[r] * math.log(2.0) / math.log(i + 1.0))
    return dcg


def ndcg_script(top_n, rates, dcg):
    st_rates = sorted(rates, key=lambda r: -NDCG_REL_SCORE[r])
    got, best = dcg(top_n, rates), dcg(top_n, st_rates)
    out = []
    i = 0
    while i < top_n and i < len(rates):
        out.append(got[i] / best[i] if best[i] != 0 else 0)
        i += 1
    return out


def eval_query(rates, version, max_position):
    """EvalQuery's hash of one query: PatN, MAP, NDCG (and MeanNDCG in 4.0)."""
    if version == 3:
        return {"PatN": precision_at_n_3(max_position, rates), "MAP": average_precision(rates),
                "NDCG": ndcg_script(max_position, rates, dcg_3)}
    ndcg_all = ndcg_script(len(rates), rates, dcg_4)
    return {"PatN": precision_at_n_4(max_position, rates), "MAP": average_precision(rates),
            "NDCG": ndcg_all, "MeanNDCG": sum(ndcg_all) / len(ndcg_all)}


def script_per_query(labels, preds, offsets, version, max_position=10):
    """What OuputResults adds into its averages for each query: position iPos of a list the
    query lacks is undef, which adds 0 (and the mean divides by every query)."""
    out = {f"ndcg@{k}": [] for k in range(1, max_position + 1)}
    out.update({f"p@{k}": [] for k in range(1, max_position + 1)})
    out["map"], out["meanndcg"] = [], []
    for q in range(len(offsets) - 1):
        lo, hi = offsets[q], offsets[q + 1]
        rates = perl_rates([int(v) for v in labels[lo:hi]], [float(v) for v in preds[lo:hi]])
        result = eval_query(rates, version, max_position)
        for k in range(1, max_position + 1):
            out[f"ndcg@{k}"].append(result["NDCG"][k - 1] if k - 1 < len(result["NDCG"]) else 0)
            out[f"p@{k}"].append(result["PatN"][k - 1] if k - 1 < len(result["PatN"]) else 0)
        out["map"].append(result["MAP"])
        if version == 4:
            out["meanndcg"].append(result["MeanNDCG"])
    return {name: np.array(v, dtype=np.float64) for name, v in out.items() if v}


# --- random data with everything the conventions turn on ---

def letor_like(seed, n_queries=60):
    """Queries of 1-25 documents (many shorter than 10), labels 0-2 (some queries all 0, some all
    relevant), scores from a few values so that ties are common."""
    rng = np.random.default_rng(seed)
    lengths = rng.integers(1, 26, n_queries)
    offsets = np.r_[0, np.cumsum(lengths)].astype(np.int64)
    labels = rng.choice([0, 1, 2], size=offsets[-1], p=[0.6, 0.25, 0.15]).astype(np.float64)
    labels[offsets[0]:offsets[1]] = 0  # no relevant document
    labels[offsets[1]:offsets[2]] = 2  # every document relevant
    kind = rng.integers(0, 3)
    scores = rng.integers(0, 4, offsets[-1]).astype(np.float64) if kind else rng.normal(size=offsets[-1])
    scores[offsets[2]:offsets[3]] = 1.0  # one query entirely tied
    return scores, labels, offsets


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("version", [3, 4])
def test_matches_the_scripts_per_query_and_mean(seed, version):
    scores, labels, offsets = letor_like(seed)
    assert (np.diff(offsets) < 10).any() and (np.diff(offsets) >= 10).any()
    expected = script_per_query(labels, scores, offsets, version)
    for metric, values in expected.items():
        ours = conventions.per_query(scores, labels, offsets, metric, f"letor{version}")
        np.testing.assert_allclose(ours, values, rtol=0, atol=1e-12, err_msg=f"letor{version} {metric}")
        assert abs(ours.mean() - values.mean()) <= 1e-12


def test_letor3_original_cutoff_16():
    """The LETOR 3.0 release sets $iMaxPosition = 16 (a later copy 10): the convention has no
    cutoff of its own, so P@16 and NDCG@16 agree too."""
    scores, labels, offsets = letor_like(11)
    expected = script_per_query(labels, scores, offsets, 3, max_position=16)
    for metric in ("ndcg@16", "p@16", "ndcg@13", "p@12"):
        np.testing.assert_allclose(conventions.per_query(scores, labels, offsets, metric, "letor3"),
                                   expected[metric], rtol=0, atol=1e-12)


def test_named_dict_and_name_agree():
    scores, labels, offsets = letor_like(3)
    for name in ("letor3", "letor4"):
        np.testing.assert_array_equal(conventions.per_query(scores, labels, offsets, "ndcg@10", name),
                                      conventions.per_query(scores, labels, offsets, "ndcg@10",
                                                            conventions.NAMED[name]))


# --- hand-computed cases ---

def one_query(labels, scores):
    return np.array(scores, dtype=np.float64), np.array(labels, dtype=np.float64), np.array([0, len(labels)])


def value(labels, scores, metric, convention):
    return float(conventions.per_query(*one_query(labels, scores), metric, convention)[0])


def test_short_query_ndcg_is_zero_under_both():
    # 3 documents ranked labels 2, 0, 1
    args = ([2, 0, 1], [3.0, 2.0, 1.0])
    at3 = (3 + 0 + 1 / math.log2(3)) / (3 + 1 + 0)  # ranks 1, 2 undiscounted; gains 3, 0, 1
    assert value(*args, "ndcg@3", "letor4") == pytest.approx(at3, abs=1e-15)
    assert value(*args, "ndcg@3", "letor3") == pytest.approx(at3, abs=1e-15)
    assert value(*args, "ndcg@10", "letor4") == 0.0
    assert value(*args, "ndcg@10", "letor3") == 0.0
    ours = (3 + 0 + 1 / 2) / (3 + 1 / math.log2(3))  # ours: the whole list, 1/log2(1 + rank)
    assert value(*args, "ndcg@10", {}) == pytest.approx(ours, abs=1e-15)


def test_short_query_precision_differs_between_the_scripts():
    args = ([2, 0, 1], [3.0, 2.0, 1.0])  # 2 relevant in 3 documents
    assert value(*args, "p@5", "letor4") == pytest.approx(2 / 5)  # the holes are non-relevant
    assert value(*args, "p@5", "letor3") == 0.0  # position 5 never computed
    assert value(*args, "p@3", "letor3") == pytest.approx(2 / 3)
    assert value(*args, "p@5", {}) == pytest.approx(2 / 5)


def test_ranks_one_and_two_are_not_discounted():
    args = ([0, 2, 0], [2.0, 1.0, 0.0])  # the relevant document at rank 2
    assert value(*args, "ndcg@2", "letor4") == 1.0  # DCG 0 + 3, ideal 3 + 0
    assert value(*args, "ndcg@2", {}) == pytest.approx(1 / math.log2(3))
    assert value(*args, "ndcg@1", "letor4") == 0.0


def test_ties_keep_the_file_order():
    assert value([0, 2], [1.0, 1.0], "ndcg@1", "letor4") == 0.0
    assert value([2, 0], [1.0, 1.0], "ndcg@1", "letor4") == 1.0
    assert value([0, 1], [1.0, 1.0], "map", "letor3") == 0.5


def test_mean_ndcg_by_hand():
    # ranked labels 0, 1: NDCG@1 = 0 / 1, NDCG@2 = (0 + 1) / (1 + 0)
    assert value([0, 1], [2.0, 1.0], "meanndcg", "letor4") == 0.5
    # ranked 1, 0, 2: DCG 1, 1, 1 + 3/log2(3); ideal 3, 4, 4
    expected = (1 / 3 + 1 / 4 + (1 + 3 / math.log2(3)) / 4) / 3
    assert value([1, 0, 2], [3.0, 2.0, 1.0], "meanndcg", "letor4") == pytest.approx(expected, abs=1e-15)


def test_no_relevant_document_scores_zero():
    for metric in ("ndcg@1", "ndcg@3", "p@1", "map", "meanndcg"):
        for name in ("letor3", "letor4"):
            assert value([0, 0, 0], [3.0, 2.0, 1.0], metric, name) == 0.0


def test_labels_outside_the_scripts_tables_are_refused():
    with pytest.raises(ValueError, match=r"labels 0\.\.2 only.*\[4\.0\]"):
        value([0, 4, 1], [3.0, 2.0, 1.0], "ndcg@10", "letor3")
    with pytest.raises(ValueError, match=r"labels 0\.\.2 only"):
        value([0, 0.5], [3.0, 2.0], "map", "letor4")
    assert value([0, 4, 1], [3.0, 2.0, 1.0], "ndcg@3", {}) > 0  # ours takes any label


def test_unknown_name_and_values_are_refused():
    with pytest.raises(ValueError, match="unknown name 'letor5'.*letor3"):
        conventions.resolve("letor5")
    with pytest.raises(ValueError, match="short_query"):
        conventions.resolve({"short_query": "drop"})
    with pytest.raises(ValueError, match="short_precision"):
        conventions.resolve({"short_precision": "n"})
