"""The retrieval configuration: the knobs the environment sets reach the assembler
(``RetrievalConfig.from_settings``), and the vector arm's depth follows the budget."""

from dataclasses import replace

from haki.assembler import DEFAULT_CONFIG, RetrievalConfig
from haki.settings import Settings


def test_the_environment_knobs_reach_the_config() -> None:
    config = RetrievalConfig.from_settings(Settings.from_env({
        "HAKI_TRACE_DURABLE_COMMIT": "1", "HAKI_RECALL_MAX_DISTANCE": "0.25",
        "HAKI_VOLATILITY_HORIZON_VOLATILE_DAYS": "9"}))
    assert config.trace_durable_commit is True
    assert config.recall_max_distance == 0.25
    assert config.volatility_horizon_volatile_days == 9.0


def test_the_defaults_commit_traces_without_waiting_for_the_flush() -> None:
    assert Settings().trace_durable_commit is False
    assert RetrievalConfig.from_settings(Settings()).trace_durable_commit is False
    assert DEFAULT_CONFIG.trace_durable_commit is False


def test_the_vector_depth_follows_the_budget() -> None:
    """96 candidates up to 1,500 tokens (where 96 recall as much as 128 and stay within one
    HNSW pass), 128 at 2,000, growing with the budget up to 256."""
    depth = DEFAULT_CONFIG.vector_depth
    assert [depth(b) for b in (1, 900, 1500, 1501, 2000, 3000, 4000, 100_000)] == [
        96, 96, 96, 97, 128, 192, 256, 256]


def test_a_smaller_maximum_caps_the_vector_depth_at_any_budget() -> None:
    """The ablations and tests that set ``vector_top_k`` get that depth, never more."""
    shallow = replace(DEFAULT_CONFIG, vector_top_k=8)
    assert {shallow.vector_depth(b) for b in (1, 900, 4000)} == {8}
    fixed = replace(DEFAULT_CONFIG, vector_top_k=128, vector_top_k_min=128)
    assert {fixed.vector_depth(b) for b in (1, 900, 4000)} == {128}
