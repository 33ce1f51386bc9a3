"""Hybrid scoring arithmetic: min-max, weighted fusion, reciprocal-rank fusion, redundancy, ranking."""

from __future__ import annotations

import math

import numpy as np
import pytest

from citewise.index.fusion import RRF_K, drop_redundant, minmax, rank, reciprocal_rank_fusion, weighted_fusion


def at_angle(degrees: float) -> list[float]:
    radians = math.radians(degrees)
    return [math.cos(radians), math.sin(radians)]


# minmax ----------------------------------------------------------------------------------------------------
def test_minmax_scales_to_the_unit_interval() -> None:
    assert minmax({"a": 10.0, "b": 5.0, "c": 0.0}) == {"a": 1.0, "b": 0.5, "c": 0.0}
    assert minmax({"a": -1.0, "b": 3.0, "c": 0.0}) == {"a": 0.0, "b": 1.0, "c": 0.25}


def test_minmax_of_equal_scores_is_all_ones() -> None:
    assert minmax({"a": 0.3, "b": 0.3, "c": 0.3}) == {"a": 1.0, "b": 1.0, "c": 1.0}
    assert minmax({"only": -7.0}) == {"only": 1.0}


def test_minmax_of_nothing_is_empty() -> None:
    assert minmax({}) == {}


# weighted_fusion -------------------------------------------------------------------------------------------
BM25 = {"a": 10.0, "b": 5.0, "c": 0.0}  # normalised: a 1.0, b 0.5, c 0.0
DENSE = {"a": 0.2, "b": 0.6, "d": 0.4}  # normalised: a 0.0, b 1.0, d 0.5; c is missing here, d in BM25


@pytest.mark.parametrize(
    ("alpha", "expected"),
    [
        (0.0, {"a": 1.0, "b": 0.5, "c": 0.0, "d": 0.0}),
        (0.5, {"a": 0.5, "b": 0.75, "c": 0.0, "d": 0.25}),
        (1.0, {"a": 0.0, "b": 1.0, "c": 0.0, "d": 0.5}),
        (0.25, {"a": 0.75, "b": 0.625, "c": 0.0, "d": 0.125}),
    ],
)
def test_weighted_fusion_arithmetic(alpha: float, expected: dict[str, float]) -> None:
    fused = weighted_fusion(BM25, DENSE, alpha)
    assert set(fused) == set(expected)
    for key, value in expected.items():
        assert fused[key] == pytest.approx(value, abs=1e-12), key


def test_weighted_fusion_with_one_side_empty() -> None:
    assert weighted_fusion({}, {"x": 0.9, "y": 0.1}, 0.5) == pytest.approx({"x": 0.5, "y": 0.0})
    assert weighted_fusion({"x": 3.0}, {}, 0.5) == {"x": 0.5}
    assert weighted_fusion({}, {}, 0.5) == {}


@pytest.mark.parametrize("alpha", [-0.01, 1.01, float("nan")])
def test_weighted_fusion_rejects_alpha_out_of_range(alpha: float) -> None:
    with pytest.raises(ValueError, match="alpha"):
        weighted_fusion(BM25, DENSE, alpha)


# reciprocal_rank_fusion ------------------------------------------------------------------------------------
def test_rrf_default_k_is_60() -> None:
    assert RRF_K == 60


def test_rrf_exact_values() -> None:
    fused = reciprocal_rank_fusion([["a", "b", "c"], ["b", "d"]])
    assert fused == pytest.approx(
        {"a": 1 / 61, "b": 1 / 62 + 1 / 61, "c": 1 / 63, "d": 1 / 62}, rel=1e-15, abs=0
    )
    assert rank(fused) == ["b", "a", "d", "c"]


def test_rrf_with_custom_k_and_no_rankings() -> None:
    assert reciprocal_rank_fusion([["x", "y"], ["x"]], k=0) == {"x": 2.0, "y": 0.5}
    assert reciprocal_rank_fusion([]) == {}
    assert reciprocal_rank_fusion([[], []]) == {}


# drop_redundant --------------------------------------------------------------------------------------------
def test_near_duplicate_of_a_better_hit_is_dropped_and_a_dissimilar_one_kept() -> None:
    vectors = np.array([at_angle(0), at_angle(10), at_angle(90)])  # cos(a, b) = 0.985
    assert drop_redundant(["a", "b", "c"], vectors, 0.9) == ["a", "c"]


def test_redundancy_is_judged_against_kept_hits_only() -> None:
    # b is a near-duplicate of a (cos 0.94) and dropped; c is close to b (cos 0.94) but not to a (cos 0.77)
    vectors = np.array([at_angle(0), at_angle(20), at_angle(40)])
    assert drop_redundant(["a", "b", "c"], vectors, 0.9) == ["a", "c"]


def test_similarity_equal_to_the_threshold_is_kept() -> None:
    vectors = np.array([[1.0, 0.0], [0.5, math.sqrt(0.75)]])
    assert drop_redundant(["a", "b"], vectors, 0.5) == ["a", "b"]
    assert drop_redundant(["a", "b"], vectors, 0.49) == ["a"]


def test_threshold_one_keeps_everything_even_exact_duplicates() -> None:
    vectors = np.array([at_angle(0), at_angle(0), at_angle(0)])
    assert drop_redundant(["a", "b", "c"], vectors, 1.0) == ["a", "b", "c"]
    assert drop_redundant(["a", "b", "c"], vectors, 0.999) == ["a"]


def test_drop_redundant_preserves_the_given_order() -> None:
    vectors = np.array([at_angle(90), at_angle(45), at_angle(0), at_angle(5)])
    assert drop_redundant(["z", "m", "a", "b"], vectors, 0.95) == ["z", "m", "a"]


def test_drop_redundant_of_nothing() -> None:
    assert drop_redundant([], np.zeros((0, 2)), 0.5) == []


def test_a_limit_gives_the_first_keys_of_the_whole_result() -> None:
    rng = np.random.default_rng(3)
    vectors = rng.normal(size=(300, 8))
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    keys = [f"k{i}" for i in range(300)]
    whole = drop_redundant(keys, vectors, 0.6)
    assert 10 < len(whole) < 300  # some dropped, more than the limit kept
    for limit in (1, 5, 10, len(whole), 400):
        assert drop_redundant(keys, vectors, 0.6, limit=limit) == whole[:limit]
    assert drop_redundant(keys[:3], vectors[:3], 1.0, limit=2) == keys[:2]


# rank ------------------------------------------------------------------------------------------------------
def test_rank_orders_by_descending_score() -> None:
    assert rank({"a": 0.1, "b": 0.9, "c": -0.5, "d": 0.5}) == ["b", "d", "a", "c"]


def test_rank_breaks_ties_by_key() -> None:
    scores = {"delta": 1.0, "bravo": 1.0, "charlie": 2.0, "alpha": 1.0}
    assert rank(scores) == ["charlie", "alpha", "bravo", "delta"]
    assert rank(dict(reversed(list(scores.items())))) == ["charlie", "alpha", "bravo", "delta"]


def test_rank_of_nothing() -> None:
    assert rank({}) == []
