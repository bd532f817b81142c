"""Whether a method fits one node at a data set's size, before any job (issue 43): the predicted
CPU and memory of one fit from measured footprints, the size where it stops fitting, and the
config check's one line naming the method and the limit."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import yaml

from rankstudy.pipeline.config import with_method_defaults, check_node_fits
from rankstudy.pipeline.errors import ConfigError
from rankstudy.rankers.footprint import Footprint, Growth, largest_documents, load_footprints, node_problem, peak_gb

REPO = Path(__file__).resolve().parents[1]


def footprint(cpu: Growth, mem: Growth | None = None) -> Footprint:
    return Footprint("m", "catboost", {"loss": "YetiRank"}, "mslr30k", cpu, mem, "2026-11-28")


def test_a_power_law_with_a_floor_from_a_stopped_fit():
    grows = Growth(a=2e-4, b=1.1)
    assert grows.at(1e6) == pytest.approx(2e-4 * 1e6 ** 1.1) and not grows.bound
    stopped = Growth(a=None, b=None, floor_n=140_400, floor_y=630.0)  # over a 630 s cap at 1/16
    assert stopped.at(2_270_296) == pytest.approx(630.0 * 2_270_296 / 140_400) and stopped.bound
    assert Growth(a=1e-3, b=None).at(1e6) == pytest.approx(1e3)  # one point: linear, a bound


def test_the_size_where_a_method_stops_fitting():
    fp = footprint(Growth(a=None, b=None, floor_n=140_400, floor_y=630.0))
    problem = node_problem(fp, 2_270_296, 136, memory_gb=16, fit_cpu_hours=2)
    stops = 2 * 3600 * 140_400 / 630.0  # where the linear floor reaches 2 h
    assert problem.startswith("predicted at least 2.8 h of CPU a fit (node.fit_cpu_hours: 2) at 2,270,296 training "
                              "documents (measured on mslr30k-shaped folds, 2026-11-28)")
    assert f"up to about {stops:,.0f}"[:-4] in problem
    assert node_problem(fp, 500_000, 136, memory_gb=16, fit_cpu_hours=2) is None
    assert largest_documents(lambda n: True) == math.inf and largest_documents(lambda n: False) == 0.0


def test_memory_counts_the_features_held_beside_the_fit():
    fp = footprint(Growth(a=1e-4, b=1.0), Growth(a=5e-3, b=1.0))  # 5 KB of growth a document
    data = 2_270_296 * (4 / 3) * 136 * 8 / 2**30
    assert peak_gb(fp, 2_270_296, 136) == pytest.approx(data + 5e-3 * 2_270_296 / 1024)
    problem = node_problem(fp, 2_270_296, 136, memory_gb=8, fit_cpu_hours=2)
    assert "GB of memory (node.memory_gb: 8)" in problem and "h of CPU" not in problem
    # a node smaller than the features themselves (Istella's 7.3M documents, float64: 16 GB) says so
    problem = node_problem(fp, 7_325_625, 220, memory_gb=16, fit_cpu_hours=2)
    assert f"GB of memory (node.memory_gb: 16, the features alone {7_325_625 * 4 / 3 * 220 * 8 / 2**30:.1f} GB)" in problem


def write_footprints(workdir: Path, entry: dict) -> None:
    (workdir / "config").mkdir(parents=True, exist_ok=True)
    (workdir / "config" / "footprints.yaml").write_text(yaml.safe_dump({"methods": {"catboost_yetirank": entry}}))


def test_the_config_check_refuses_a_method_too_large_for_the_node_naming_it(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the working directory's config/footprints.yaml, not the shipped one
    entry = {"kind": "catboost", "params": {"loss": "YetiRank"}, "shape": "mslr30k", "measured": "test",
             "cpu_seconds": {"a": None, "b": None, "floor_n": 140400, "floor_y": 630.0}}
    write_footprints(tmp_path, entry)
    registry = {"MSLR-WEB30K": {"train_documents": 2270296, "n_features": 136, "footprint_shape": "mslr30k"},
                "MQ2008": {"n_features": 46}}
    config = {"datasets": ["MSLR-WEB30K"], "node": {"memory_gb": 16, "fit_cpu_hours": 2},
              "methods": {"yeti": {"kind": "catboost", "params": {"loss": "YetiRank"}},
                          "other": {"kind": "catboost", "params": {"loss": "QueryRMSE"}}}}
    with pytest.raises(ConfigError, match=r"^config key methods.yeti: does not fit one node on MSLR-WEB30K: "
                                          r"predicted at least 2.8 h of CPU a fit \(node.fit_cpu_hours: 2\)"):
        check_node_fits(config, registry, ["yeti", "other"], tmp_path)
    assert check_node_fits({**config, "node": {"fit_cpu_hours": 4}}, registry, ["yeti"], tmp_path) == ()  # a larger node
    # no footprint: not checked, and said before any job
    assert check_node_fits(config, registry, ["other"], tmp_path) == (
        "node check on MSLR-WEB30K: other not checked (no footprint measured on mslr30k-shaped folds with these "
        "parameters in config/footprints.yaml): it may not fit one node",)
    assert check_node_fits({**config, "datasets": ["MQ2008"]}, registry, ["yeti"], tmp_path) == ()  # no size known


def test_the_shipped_footprints_load_and_every_entry_names_a_leaderboard_method():
    prints = load_footprints(REPO / "config" / "footprints.yaml")
    study = yaml.safe_load((REPO / "config" / "studies" / "leaderboard.yaml").read_text())
    study = with_method_defaults(study)  # as the config check sees the methods
    board = study["methods"]
    assert {fp.method for fp in prints} == set(study["run_methods"] if study.get("run_methods") else board)
    for fp in prints:
        assert fp.method in board and fp.matches(board[fp.method]), fp.method
        assert fp.cpu_seconds.at(1e5) > 0


def test_cpu_grows_at_least_linearly_past_the_sizes_measured(tmp_path):
    """Two early-stopped fits can fit b < 1 (fewer rounds at the larger size): past the largest
    size measured the CPU is at least linear from there; within it the law as fitted."""
    entry = {"kind": "lambdamart", "params": {}, "shape": "mslr30k", "sizes": [71_630, 140_400],
             "cpu_seconds": {"a": 400.0, "b": -0.2}}
    (tmp_path / "footprints.yaml").write_text(yaml.safe_dump({"methods": {"lambdamart": entry}}))
    (fp,) = load_footprints(tmp_path / "footprints.yaml")
    at_largest = 400.0 * 140_400 ** -0.2
    assert fp.cpu_seconds.at(100_000) == pytest.approx(400.0 * 100_000 ** -0.2)
    assert fp.cpu_seconds.at(140_400 * 16) == pytest.approx(at_largest * 16)



def test_memory_grows_at_least_along_the_line_through_the_two_largest_sizes(tmp_path):
    """A fixed part plus a part per document: LightGBM on Istella-shaped folds grew 584 MB at 1/32
    and 637 MB at 1/16, which a power law takes to 0.9 GB at full size and the line to 2.2 GB."""
    n1, n2, full = 221_117, 442_631, 7_325_625
    b = math.log(637 / 584) / math.log(n2 / n1)
    entry = {"kind": "lambdamart", "params": {}, "shape": "istella", "sizes": [n1, n2],
             "cpu_seconds": {"a": 1e-3, "b": 1.0}, "rss_growth_mb": {"a": 584 / n1 ** b, "b": b}}
    (tmp_path / "footprints.yaml").write_text(yaml.safe_dump({"methods": {"lambdamart@istella": entry}}))
    (fp,) = load_footprints(tmp_path / "footprints.yaml")
    assert fp.rss_growth_mb.at(n2) == pytest.approx(637)  # the law where it was measured
    line = 637 + (637 - 584) / (n2 - n1) * (full - n2)
    assert fp.rss_growth_mb.at(full) == pytest.approx(line) and line / 1024 == pytest.approx(2.2, abs=0.05)
    assert (584 / n1 ** b) * full ** b / 1024 < 1.0  # the power law alone
    one_size = {**entry, "sizes": [n2], "rss_growth_mb": {"a": 637 / n2, "b": None}}
    (tmp_path / "footprints.yaml").write_text(yaml.safe_dump({"methods": {"lambdamart@istella": one_size}}))
    (fp,) = load_footprints(tmp_path / "footprints.yaml")
    assert fp.rss_growth_mb.at(full) == pytest.approx(637 * full / n2)  # one size: linear through it


def test_a_stopped_fit_of_a_method_known_to_grow_faster_gives_a_floor_that_grows_so():
    quadratic = Growth(a=None, b=None, floor_n=71_630, floor_y=210.0, floor_b=2.0)
    assert quadratic.at(71_630 * 4) == pytest.approx(210.0 * 16) and quadratic.bound
    assert Growth.from_data({"a": None, "b": None, "floor_n": 10, "floor_y": 1.0, "floor_b": 2.0}).at(30) == pytest.approx(9.0)


def test_the_config_check_names_every_method_too_large_in_its_one_line(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    slow = {"shape": "mslr30k", "measured": "test", "cpu_seconds": {"a": None, "b": None, "floor_n": 140400,
                                                                      "floor_y": 630.0}}
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "footprints.yaml").write_text(yaml.safe_dump({"methods": {
        "yeti": {**slow, "kind": "catboost", "params": {"loss": "YetiRank"}},
        "soft": {**slow, "kind": "catboost", "params": {"loss": "QuerySoftMax"}}}}))
    registry = {"MSLR-WEB30K": {"train_documents": 2270296, "n_features": 136, "footprint_shape": "mslr30k"}}
    config = {"datasets": ["MSLR-WEB30K"], "node": {"memory_gb": 16, "fit_cpu_hours": 2},
              "methods": {"yeti": {"kind": "catboost", "params": {"loss": "YetiRank"}},
                          "soft": {"kind": "catboost", "params": {"loss": "QuerySoftMax"}}}}
    with pytest.raises(ConfigError) as caught:
        check_node_fits(config, registry, ["yeti", "soft"], tmp_path)
    line = str(caught.value)
    assert line.startswith("config key methods.yeti: does not fit one node") and "\n" not in line
    assert line.endswith("; also too large: methods.soft (predicted at least 2.8 h of CPU a fit "
                         "(node.fit_cpu_hours: 2))")



def test_structrank_is_refused_on_istella_before_any_job_from_a_borrowed_lower_bound():
    """Its Istella-shaped fit could not be measured (a 5-query warm-up did not end in 30 min): the
    MSLR-shaped fit's floor stands in, a lower bound (longer queries, more features), and says so."""
    from rankstudy.data.registry import load_registries

    registry = load_registries([REPO / "config" / "datasets.yaml"])
    config = {"datasets": ["Istella"], "node": {}, "methods": {"structrank": {"kind": "structrank"}}}
    with pytest.raises(ConfigError, match=r"^config key methods.structrank: does not fit one node on Istella: predicted "
                                          r"at least [0-9.]+ h of CPU a fit .*\(a lower bound from mslr30k-shaped folds, "):
        check_node_fits(config, registry, ["structrank"], REPO)


def test_float32_features_halve_what_a_fit_holds():
    """features.dtype: float32 stores half the bytes, which the node check counts; no ranker holds
    a float64 copy of them (tests/test_rowchunks.py), so that is all it counts."""
    from rankstudy.data.registry import load_registries
    from rankstudy.rankers.footprint import features_gb, held_bytes

    assert held_bytes("float64") == 8 and held_bytes("float32") == 4
    assert features_gb(7_325_625, 220, 4) == pytest.approx(features_gb(7_325_625, 220) / 2)
    registry = load_registries([REPO / "config" / "datasets.yaml"])
    study = with_method_defaults(yaml.safe_load((REPO / "config" / "studies" / "leaderboard.yaml").read_text()))
    node = {"memory_gb": 16, "fit_cpu_hours": 2}
    config = {"datasets": ["Istella"], "node": node, "methods": study["methods"]}
    with pytest.raises(ConfigError, match=r"the features alone 16.0 GB"):
        check_node_fits(config, registry, ["pointwise"], REPO)
    as32 = {**config, "features": {"dtype": "float32"}}
    assert check_node_fits(as32, registry, ["pointwise", "lambdamart", "mlp_softmax", "adarank_ndcg"], REPO) == ()
    # the conditional models' sample takes about 8 bytes a document for each of its states
    with pytest.raises(ConfigError, match=r"^config key methods.cond_mle: does not fit one node on Istella: "
                                          r"predicted [\d.]+ GB of memory \(node.memory_gb: 16\)"):
        check_node_fits(as32, registry, ["cond_mle"], REPO)
