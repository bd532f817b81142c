"""The reproduction scorecard's statistics (rankstudy.reporting.scorecard): the bootstrap
interval against scipy's, verdicts, claims, and the evaluation convention it names."""

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from rankstudy.reporting import scorecard as sc


def folds_of(rng, n_folds=3, n_queries=30, shift=0.0):
    """Written scores of n_folds folds: documents whose label follows the score, plus noise."""
    out = {}
    for fold in range(1, n_folds + 1):
        rows = []
        for q in range(n_queries):
            n = int(rng.integers(5, 40))
            score = rng.normal(size=n)
            label = np.clip(np.round(score + shift + rng.normal(scale=1.5, size=n)), 0, 2)
            rows.append(pd.DataFrame({"qid": 1000 * fold + q, "doc": np.arange(n), "label": label, "score": score}))
        out[fold] = sc.FoldScores.from_frame(pd.concat(rows, ignore_index=True))
    return out


def test_one_folds_interval_matches_scipys_percentile_bootstrap():
    values = np.random.default_rng(0).beta(2, 3, size=60)
    ours = sc.summarise({1: values}, n_resamples=20000, seed=0, confidence=0.95)
    ref = stats.bootstrap((values,), np.mean, n_resamples=20000, method="percentile", confidence_level=0.95,
                          random_state=1).confidence_interval
    assert ours["ours"] == pytest.approx(values.mean())
    assert ours["ci_low"] == pytest.approx(ref.low, abs=0.004) and ours["ci_high"] == pytest.approx(ref.high, abs=0.004)


def test_the_mean_is_over_fold_means_and_the_interval_resamples_within_folds():
    a, b = np.full(10, 0.2), np.array([0.9, 1.0] * 50)
    s = sc.summarise({1: a, 2: b}, n_resamples=2000, seed=0, confidence=0.95)
    assert s["ours"] == pytest.approx((0.2 + 0.95) / 2)  # not the mean over the 110 queries
    assert s["ours_std"] == pytest.approx(np.std([0.2, 0.95], ddof=1))
    # fold 1 is constant, so only fold 2's resampling moves the mean, by about +-0.05 * 1.96 / 10 / 2
    assert 0.0 < s["ci_high"] - s["ci_low"] < 0.012 and s["n_queries"] == 110


@pytest.mark.parametrize("published, expected", [(0.5, "reproduced"), (0.9, "below"), (0.1, "above"),
                                                 (np.nan, "")])
def test_verdicts(published, expected):
    assert sc.verdict(published, 0.4, 0.6) == expected


def test_a_cell_names_its_closest_convention_and_every_one_it_tried():
    folds = folds_of(np.random.default_rng(1))
    cell = sc.Cell("p", "s", "r", "NDCG@10", "m [first]", "ndcg@10", published=0.0)
    row, variants = sc.score_cell(cell, folds, n_resamples=300, seed=0, confidence=0.95)
    by_name = {v["convention"]: v for v in variants}
    assert row["ours"] == by_name["ours"]["ours"] and row["verdict"] == "above"
    assert {"gain r", "binary gain", "Jarvelin discount"} <= set(by_name)
    # the published 0 is below every variant: the closest is the lowest one, if lower than ours
    lowest = min(variants, key=lambda v: v["ours"])
    assert row["closest_convention"] == ("none closer" if lowest["convention"] == "ours" else lowest["convention"])
    # a threshold no label reaches gives no query any credit: not tried
    _, map_variants = sc.score_cell(sc.Cell("p", "s", "r", "MAP", "m [first]", "map", 0.5),
                                    {f: sc.FoldScores(x.scores, np.minimum(x.labels, 1), x.offsets, x.qids)
                                     for f, x in folds.items()}, 300, 0, 0.95)
    assert [v["convention"] for v in map_variants] == ["ours"]


def test_a_study_scored_under_letor3_puts_ours_under_letor3_as_its_paper_table_does():
    """LETOR's baselines were scored by Eval-Score-3.0.pl: the cell's "ours" is our scores under
    letor3 (the per-query values of conventions.per_query), and the variants move from there."""
    from rankstudy.evaluation import conventions

    folds = folds_of(np.random.default_rng(3), n_queries=12)
    # a short query (3 documents) so that letor3's NDCG@10 of a query shorter than 10 counts
    short = {f: sc.FoldScores(x.scores[:3], x.labels[:3], np.array([0, 3]), x.qids[:1]) for f, x in folds.items()}
    folds = {f: sc.FoldScores(np.r_[x.scores, short[f].scores], np.r_[x.labels, short[f].labels],
                              np.r_[x.offsets, x.offsets[-1] + 3], np.r_[x.qids, -f]) for f, x in folds.items()}
    cell = sc.Cell("p", "s", "r", "NDCG@10", "m [first]", "ndcg@10", published=0.4)
    plain, _ = sc.score_cell(cell, folds, 300, 0, 0.95)
    letor, variants = sc.score_cell(cell, folds, 300, 0, 0.95, convention="letor3")
    by_hand = np.mean([conventions.per_query(x.scores, x.labels, x.offsets, "ndcg@10", "letor3").mean()
                       for x in folds.values()])
    assert letor["ours"] == pytest.approx(by_hand) and letor["ours"] != pytest.approx(plain["ours"])
    # letor3 already discounts as Jarvelin: that variant changes nothing and is not listed
    assert "Jarvelin discount" not in {v["convention"] for v in variants}


def test_a_claim_is_the_paired_difference_over_common_queries():
    rng = np.random.default_rng(2)
    better = folds_of(rng)
    # the worse system: the same queries, its scores reversed, so it ranks worse
    worse = {f: sc.FoldScores(-x.scores, x.labels, x.offsets, x.qids) for f, x in better.items()}
    claim = sc.Claim("p", "s", "better above worse", "a", "b", "ndcg@10")
    row = sc.score_claim(claim, better, worse, 500, 0, 0.95)
    assert row["verdict"] == "reproduced" and row["ci_low"] > 0
    assert sc.score_claim(claim, worse, better, 500, 0, 0.95)["verdict"] == "reversed"
    assert sc.score_claim(claim, better, better, 500, 0, 0.95)["verdict"] == "no difference"
    elsewhere = {f: sc.FoldScores(x.scores, x.labels, x.offsets, -x.qids) for f, x in better.items()}
    with pytest.raises(ValueError, match="no common test queries"):
        sc.score_claim(claim, better, elsewhere, 100, 0, 0.95)


def test_the_summary_line_counts_cells_claims_and_cells_not_run():
    card = pd.DataFrame([
        {"kind": "cell", "verdict": "reproduced", "closest_verdict": ""},
        {"kind": "cell", "verdict": "below", "closest_verdict": "reproduced"},
        {"kind": "cell", "verdict": "below", "closest_verdict": "below"},
        {"kind": "cell", "verdict": "not run", "closest_verdict": ""},
        {"kind": "claim", "verdict": "no difference", "closest_verdict": ""},
    ])
    line = sc.summary_line(card)
    assert line.startswith("1 of 3 published cells reproduced")
    assert "2 below the paper" in line and "1 more reproduced under an evaluation convention" in line
    assert "1 more cells of methods we do not run" in line and "0 of 1 claims" in line


def test_written_scores_are_grouped_by_query_in_file_order():
    frame = pd.DataFrame({"qid": [7, 7, 3, 3, 3], "doc": range(5), "label": [1, 0, 2, 0, 1],
                          "score": [0.1, 0.2, 0.3, 0.4, 0.5]})
    f = sc.FoldScores.from_frame(frame)
    assert list(f.qids) == [3, 7] and list(f.offsets) == [0, 3, 5]
    assert list(f.scores) == [0.3, 0.4, 0.5, 0.1, 0.2]


def test_beyond_matching_puts_our_best_system_beside_our_run_of_the_papers_best():
    rng = np.random.default_rng(3)
    base = {"a [first]": 0.4, "b [first]": 0.6, "c [first]": 0.9}
    per_query = {("s", system): pd.DataFrame({"fold": np.repeat([1, 2], 40), "qid": np.arange(80),
                                              "map": np.clip(mean + rng.normal(scale=0.05, size=80), 0, 1)})
                 for system, mean in base.items()}
    learned = {("s", "a [first]"): True, ("s", "b [first]"): True, ("s", "c [first]"): False}
    card = pd.DataFrame([
        {"kind": "cell", "paper": "p", "study": "s", "row": "A", "column": "MAP", "system": "a [first]",
         "metric": "map", "published": 0.7, "verdict": "below"},
        {"kind": "cell", "paper": "p", "study": "s", "row": "B", "column": "MAP", "system": "b [first]",
         "metric": "map", "published": 0.5, "verdict": "above"},
    ])
    table = sc.beyond(card, per_query, learned, 2000, 0)
    row = table.iloc[0]
    # the paper's best row is A (0.7); our best learned system is b (c did not learn)
    assert row["paper_best_row"] == "A" and row["paper_best_system"] == "a [first]"
    assert row["our_best_system"] == "b [first]" and row["n_queries"] == 80
    assert row["diff"] == pytest.approx(per_query[("s", "b [first]")]["map"].groupby(np.repeat([1, 2], 40)).mean().mean()
                                        - per_query[("s", "a [first]")]["map"].groupby(np.repeat([1, 2], 40)).mean().mean())
    assert row["p_rand"] < 0.01


def test_the_closest_protocol_variant_joins_its_cells_and_counts_in_the_summary():
    card = pd.DataFrame([
        {"kind": "cell", "paper": "p", "study": "s", "row": "A", "column": "MAP", "system": "A [first]",
         "metric": "map", "published": 0.6, "ours": 0.5, "ours_std": 0.01, "ci_low": 0.48, "ci_high": 0.52,
         "diff": -0.1, "verdict": "below", "closest_convention": "none closer", "closest_value": np.nan,
         "closest_verdict": "", "n_queries": 100, "learned": True},
        {"kind": "cell", "paper": "p", "study": "s", "row": "B", "column": "MAP", "system": "B [first]",
         "metric": "map", "published": 0.5, "ours": 0.5, "ours_std": 0.01, "ci_low": 0.48, "ci_high": 0.52,
         "diff": 0.0, "verdict": "reproduced", "closest_convention": "none closer", "closest_value": np.nan,
         "closest_verdict": "", "n_queries": 100, "learned": True}])
    explained = pd.DataFrame([{"study": "s", "row": "A", "column": "MAP", "closest": "side-bad",
                               "closest_value": 0.59, "closest_verdict": "reproduced"}])
    joined = sc.with_protocols(card, explained)
    assert joined["closest_protocol"].tolist() == ["side-bad", ""]
    assert joined.loc[0, "protocol_value"] == 0.59 and joined.loc[1, "protocol_verdict"] == ""
    assert "of the 1 cells rerun under protocol variants, 1 more reproduced under one" in sc.summary_line(joined)
    assert sc.display(joined)["closest protocol variant"].tolist() == ["side-bad: 0.5900 (reproduced)", ""]
