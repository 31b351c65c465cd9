"""``RetrievalConfig.from_settings``: the knobs the environment sets reach the assembler."""

from haki.assembler import DEFAULT_CONFIG, SEED_CONFIG, RetrievalConfig
from haki.settings import Settings


def test_the_environment_knobs_reach_the_config() -> None:
    config = RetrievalConfig.from_settings(Settings.from_env({
        "HAKI_TRACE_DURABLE_COMMIT": "1", "HAKI_PARALLEL_ARMS": "0",
        "HAKI_RECALL_MAX_DISTANCE": "0.25"}))
    assert config.trace_durable_commit is True
    assert config.parallel_arms is False
    assert config.recall_max_distance == 0.25
    assert config.ranking == "fused"


def test_the_defaults_commit_traces_without_waiting_for_the_flush() -> None:
    assert Settings().trace_durable_commit is False
    assert RetrievalConfig.from_settings(Settings()).trace_durable_commit is False
    seeded = RetrievalConfig.from_settings(Settings(trace_durable_commit=True), SEED_CONFIG)
    assert (seeded.ranking, seeded.trace_durable_commit) == ("seed", True)
    assert DEFAULT_CONFIG.trace_durable_commit is False
