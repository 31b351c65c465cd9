"""The retrieval-quality harness (``haki eval``): coverage rules, the report's keys, ablations,
and the scratch database it works in."""

import json
import re
import subprocess
import sys
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import psycopg
import pytest

from haki.embedding import Embedder, get_embedder
from haki.errors import ValidationFailed
from haki.models import ContextPacket, PacketEpisode, PacketFact
from haki.settings import Settings, get_settings
from haki_local.cli import build_parser
from haki_local.evaluation import (
    ABLATION_LABELS,
    ABLATIONS,
    EvalQuery,
    carried,
    coverage,
    evaluate,
    evidence_of,
    evidence_sentence,
    load_labelled_set,
)
from haki_local.launch import local_env

SCOPE = {"project_id": "eval-test", "subject_id": "camille"}
LANG_EVENT, PARCEL_EVENT = uuid.uuid4(), uuid.uuid4()
LANG_FACT, PHONE_FACT = uuid.uuid4(), uuid.uuid4()
WHEN = datetime(2026, 3, 3, tzinfo=UTC)


@pytest.fixture(scope="module")
def embedder() -> Embedder:
    return get_embedder(get_settings())


def _packet(facts: list[PacketFact], episodes: list[PacketEpisode]) -> ContextPacket:
    return ContextPacket(facts=facts, episodes=episodes, warnings=[], status="ok",
                         empty_reason=None)


def test_coverage_counts_packet_facts_episodes_and_cited_sources() -> None:
    cited, as_episode, missing = uuid.uuid4(), uuid.uuid4(), uuid.uuid4()
    fact, other_fact = uuid.uuid4(), uuid.uuid4()
    packet = _packet(
        [PacketFact(id=fact, predicate="p", value="v", confidence=None, valid_from=None,
                    source_event_ids=[cited])],
        [PacketEpisode(event_id=as_episode, kind="k", occurred_at=WHEN, excerpt="x")])
    query = EvalQuery(**SCOPE, query="q", expected_fact_ids=[fact, other_fact],
                      expected_event_ids=[cited, as_episode, missing])
    # fact: in the packet; cited: a source of a packet fact; as_episode: a packet episode.
    assert coverage(query, packet) == 3
    # A fact id is never covered by an episode, nor an event by a fact of the same id.
    assert coverage(EvalQuery(**SCOPE, query="q", expected_fact_ids=[as_episode]), packet) == 0
    assert coverage(EvalQuery(**SCOPE, query="q", expected_event_ids=[fact]), packet) == 0


NTP_MESSAGE = ("Thanks for the review of the chat server. I added error handling to the socket "
               "handlers.\nI never synchronized the server clock with an NTP service, so the "
               "timestamps drift. The rest of the code is unchanged.")


def test_the_evidence_sentence_is_the_one_sharing_most_words_with_question_and_answer() -> None:
    query = EvalQuery(**SCOPE, query="Have I ever synchronized my server time with NTP?")
    assert evidence_sentence(NTP_MESSAGE, query).startswith("I never synchronized the server")
    # The answer's words count too: here they point at another sentence.
    answered = EvalQuery(**SCOPE, query="What did I add?", answer="error handling to the socket")
    assert evidence_sentence(NTP_MESSAGE, answered).startswith("I added error handling")


def test_content_is_carried_by_an_excerpt_holding_the_evidence_or_a_citing_fact() -> None:
    served, cut, cited, absent = uuid.uuid4(), uuid.uuid4(), uuid.uuid4(), uuid.uuid4()
    texts = {i: NTP_MESSAGE for i in (served, cut, cited, absent)}
    packet = _packet(
        [PacketFact(id=LANG_FACT, predicate="p", value="v", confidence=None, valid_from=None,
                    source_event_ids=[cited])],
        [PacketEpisode(event_id=served, kind="k", occurred_at=WHEN,
                       excerpt="…I never synchronized the server clock with an NTP service, "
                               "so the  timestamps drift."),
         PacketEpisode(event_id=cut, kind="k", occurred_at=WHEN, excerpt=NTP_MESSAGE[:60])])
    query = EvalQuery(**SCOPE, query="Have I ever synchronized my server time with NTP?",
                      expected_event_ids=[served, cut, cited, absent],
                      expected_fact_ids=[LANG_FACT])
    # Covered: served, cut, cited, the fact; carried: not the excerpt cut before the evidence.
    assert coverage(query, packet) == 4
    assert carried(query, packet, evidence_of(query, texts)) == 3


def _labelled(tmp_path: Path) -> Path:
    document = {
        "events": [
            {"id": str(LANG_EVENT), **SCOPE, "kind": "conversation.message",
             "payload": {"text": "Merci de m'écrire uniquement en français."},
             "occurred_at": "2026-01-10T09:00:00Z"},
            {"id": str(PARCEL_EVENT), **SCOPE, "kind": "ticket.opened",
             "payload": {"text": "The parcel was left in the rain and the box was soaked."},
             "occurred_at": "2026-02-01T09:00:00Z"},
        ],
        "facts": [
            {"id": str(LANG_FACT), **SCOPE, "predicate": "preferred_language",
             "value": {"language": "French"}, "source_event_ids": [str(LANG_EVENT)]},
            {"id": str(PHONE_FACT), **SCOPE, "predicate": "contact_channel",
             "value": {"channel": "SMS only, never calls"}},
            {**SCOPE, "predicate": "favourite_colour", "value": "navy blue"},
        ],
        "queries": [
            {**SCOPE, "query": "Which language should we use?", "category": "language",
             "expected_fact_ids": [str(LANG_FACT)]},
            {**SCOPE, "query": "Why did she ask for French?", "category": "language",
             "expected_event_ids": [str(LANG_EVENT)]},
            {**SCOPE, "query": "What happened to the soaked parcel?", "category": "parcel",
             "expected_event_ids": [str(PARCEL_EVENT)]},
            {**SCOPE, "query": "Does she own a boat?"},
        ],
    }
    path = tmp_path / "labelled.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    return path


def test_evaluate_reports_each_budget_and_ablation(
    tmp_path: Path, pg_superuser_url: str, embedder: Embedder
) -> None:
    report = evaluate(load_labelled_set(_labelled(tmp_path)), superuser_url=pg_superuser_url,
                      embedder=embedder, settings=Settings(), budgets=(900, 10),
                      with_misses=True)
    budgets = report["budgets"]
    assert set(budgets) == {"900", "10"}  # type: ignore[arg-type]
    run = budgets["900"]  # type: ignore[index]
    for key in ("mean_recall", "fully_covered", "mean_tokens", "latency_ms", "queries",
                "by_category", "gold_ranks", "ablations", "misses"):
        assert key in run
    assert run["queries"] == 4 and run["negative_queries"] == 1
    # No recall floor: the no-answer question is still given memory, within the budget.
    assert run["negative_injection_rate"] == 1.0 and 0 < run["negative_tokens"] <= 900
    # A tiny scope fits the budget: every expected id is covered, by the three rules.
    assert run["mean_recall"] == 1.0 and run["fully_covered"] == 1.0
    assert run["misses"] == []
    assert set(run["latency_ms"]) == {"p50", "p95"}
    assert run["gold_ranks"]["items"] == 3 and run["gold_ranks"]["covered"] == 1.0
    # Per category: the language questions and the parcel one.
    assert run["by_category"] == {
        "language": {"queries": 2, "mean_recall": 1.0, "content_recall": 1.0,
                     "fully_covered": 1.0},
        "parcel": {"queries": 1, "mean_recall": 1.0, "content_recall": 1.0,
                   "fully_covered": 1.0}}
    assert run["ablations"]["dense_only"]["mean_recall"] == 1.0
    ablations = run["ablations"]
    assert set(ablations) == set(ABLATIONS)
    # The parcel episode is cited by no fact: without episodes it cannot be covered, while the
    # language episode still is, through the fact that cites it.
    no_episodes = ablations["no_episodes"]
    assert no_episodes["mean_recall"] == pytest.approx(2 / 3, abs=1e-3)
    assert no_episodes["fully_covered"] == pytest.approx(2 / 3, abs=1e-3)
    # 10 tokens hold one item or none: the misses say where the expected ones ranked.
    tight = budgets["10"]  # type: ignore[index]
    assert tight["mean_tokens"] <= 10 and tight["misses"]
    # Recall is measured on blocks the budget bounds, tags and headers included.
    assert run["blocks_over_budget"] == tight["blocks_over_budget"] == 0
    for miss in tight["misses"]:
        assert len(miss["gold_ranks"]) == miss["expected"]
    # The scratch database is gone.
    with psycopg.connect(pg_superuser_url) as conn:
        left = conn.execute(
            "SELECT count(*) FROM pg_database WHERE datname LIKE 'haki_eval_%'").fetchone()
    assert left == (0,)


def test_evaluate_runs_only_the_ablations_asked(
    tmp_path: Path, pg_superuser_url: str, embedder: Embedder
) -> None:
    report = evaluate(load_labelled_set(_labelled(tmp_path)), superuser_url=pg_superuser_url,
                      embedder=embedder, settings=Settings(), budgets=(900,),
                      ablations=("no_episodes",))
    run = report["budgets"]["900"]  # type: ignore[index]
    assert list(run["ablations"]) == ["no_episodes"]
    assert run["ablations"]["no_episodes"]["mean_recall"] == pytest.approx(2 / 3, abs=1e-3)


def test_labelled_set_errors_name_the_query_and_field(tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    path.write_text(json.dumps({"facts": [], "queries": [{"project_id": "p", "query": "q"}]}),
                    encoding="utf-8")
    with pytest.raises(ValidationFailed, match=r"queries\[0\]: field 'subject_id'"):
        load_labelled_set(path)
    path.write_text(json.dumps({"facts": []}), encoding="utf-8")
    with pytest.raises(ValidationFailed, match="queries"):
        load_labelled_set(path)


def test_eval_is_a_cli_command() -> None:
    args = build_parser().parse_args(["eval", "set.json", "--budget", "500"])
    assert args.budget == (500,) and args.file == Path("set.json") and callable(args.run)
    args = build_parser().parse_args(["eval", "set.json", "--budget", "900,2000"])
    assert args.budget == (900, 2000)
    for bad in ("0", "900,x", "100001"):
        with pytest.raises(SystemExit):
            build_parser().parse_args(["eval", "set.json", "--budget", bad])
    assert build_parser().parse_args(["eval", "s.json"]).ablations == tuple(ABLATIONS)
    args = build_parser().parse_args(["eval", "s.json", "--ablations", "dense_only,no_text_arm"])
    assert args.ablations == ("dense_only", "no_text_arm")
    assert build_parser().parse_args(["eval", "s.json", "--ablations", "none"]).ablations == ()
    with pytest.raises(SystemExit):
        build_parser().parse_args(["eval", "s.json", "--ablations", "dense_only,seed"])


def test_haki_eval_prints_a_short_table_in_plain_words(
        tmp_path: Path, server_data_dir: Callable[[str], Path]) -> None:
    labelled = _labelled(tmp_path)
    done = subprocess.run(
        [sys.executable, "-m", "haki_local.cli", "eval", str(labelled), "--budget", "900,10",
         "--misses"], env=local_env(server_data_dir("test-eval-")), capture_output=True,
        text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    table = done.stdout
    lines = table.splitlines()
    assert lines[0] == ("labelled.json: 4 questions (3 with an answer in memory, 1 without), "
                        "embedder " + Settings().embed_provider)
    assert lines[2].split() == ["900", "tokens", "10", "tokens"]
    rows = {cells[0]: cells[1:] for line in lines[3:]
            if len(cells := re.split(r"\s{2,}", line.strip())) == 3}
    # The tiny scope fits 900 tokens: everything expected is served.
    assert rows["recall"][0] == "1.000" and rows["fully answered"][0] == "1.000"
    # Facts only: the parcel episode, cited by no fact, is lost (2 of 3 questions).
    assert rows["facts only, no episodes: recall"][0] == "0.667"
    assert {f"{label}: recall" for label in ABLATION_LABELS.values()} <= set(rows)
    assert "not fully answered at 10 tokens:" in table
    assert "no-answer questions given memory" in table and "lower is better" in table
    # Plain words only: no report key, no JSON.
    assert not re.search(r"[a-z]_[a-z]|[{}]|\bseed\b", table)
    assert len(lines) < 40
    # The scratch database's migrations are not logged; the bars name no internal key either.
    assert "applied migration" not in done.stderr and "no_vector_arm" not in done.stderr


def test_every_ablation_has_a_plain_label_and_eval_takes_json() -> None:
    assert set(ABLATION_LABELS) == set(ABLATIONS)
    assert build_parser().parse_args(["eval", "set.json", "--json"]).json is True
