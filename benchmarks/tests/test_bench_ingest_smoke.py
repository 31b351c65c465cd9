"""The ingest benchmark end to end on a tiny plan (seconds), so the harness cannot rot: a real
``haki serve`` on a scratch folder, every scenario measured, the results file written."""

import json
from pathlib import Path

from benchmarks.ingest import QUICK, run


def test_the_ingest_benchmark_measures_every_scenario_and_writes_its_results(
    tmp_path: Path,
) -> None:
    results = run(QUICK, tmp_path, "ingest-smoke")
    written = json.loads((tmp_path / "ingest-smoke.json").read_text())
    assert written["scenarios"] == results["scenarios"]
    assert [(s["route"], s["batch"]) for s in written["scenarios"]] == [
        ("POST /v1/events", 1), ("POST /v1/events", QUICK.batch),
        ("POST /v1/facts", 1), ("POST /v1/facts", QUICK.batch), ("POST /v1/events", QUICK.batch)]
    for scenario in written["scenarios"]:
        assert scenario["records"] == scenario["batch"] * scenario["requests"]
        assert scenario["records_per_s"] > 0 and scenario["latency_ms"]["p50"] > 0
        assert scenario["cpu_s"]["server"] >= 0 and scenario["cpu_s"]["postgres"] >= 0
    by_length = {row["chars"]: row for row in written["long_messages"]}
    assert set(by_length) == set(QUICK.long_lengths)
    # A longer message is embedded on more tokens, never more than the model's window.
    assert by_length[60]["model_tokens"] < by_length[2100]["model_tokens"] <= 512
    assert written["target"]["batch"] == QUICK.batch
    rss = written["peak_rss_mib"]
    assert 0 < rss["after_short_batches"] <= rss["after_long_messages"]
    assert written["table"][0].startswith("| scenario |")
