"""The LangChain retriever of the Python SDK (``haki_client.langchain``) against the clients'
own ``haki serve``: what it returns is what the context call served, with the ids, kinds and
trace id a chain needs, sync and async, as documents or as the rendered block."""

import asyncio
import uuid

import pytest
from langchain_core.documents import Document

from haki_client import AsyncHakiClient, HakiClient
from haki_client.langchain import HakiRetriever
from haki_local.demo import DEMO_PROJECT, DEMO_SUBJECT
from tests.e2e.conftest import Client, Server

QUERY = "Which language should we use when writing to Marie about her invoice?"


@pytest.fixture
def haki(haki_server: Server):
    with HakiClient(haki_server.url, haki_server.key, project_id=DEMO_PROJECT) as client:
        yield client


def test_the_retriever_returns_what_the_context_call_served(haki: HakiClient):
    retriever = HakiRetriever(client=haki, subject_id=DEMO_SUBJECT, purpose="support_reply",
                              budget_tokens=400)
    found = retriever.invoke(QUERY)
    assert found and all(isinstance(d, Document) for d in found)
    (trace_id,) = {d.metadata["trace_id"] for d in found}
    trace = haki.inspect(trace_id, subject_id=DEMO_SUBJECT)
    assert trace.query == QUERY and trace.purpose == "support_reply"
    served = ([("fact", str(f.id)) for f in trace.packet.facts]
              + [("episode", str(e.event_id)) for e in trace.packet.episodes])
    assert [(d.metadata["kind"], d.metadata["id"]) for d in found] == served
    facts = {d.metadata["predicate"]: d for d in found if d.metadata["kind"] == "fact"}
    language = next(f for f in trace.packet.facts if f.predicate == "preferred_language")
    assert facts["preferred_language"].page_content == f"preferred language: {language.value}"
    assert all(d.metadata["status"] == trace.packet.status for d in found)


def test_episodes_carry_their_speaker_and_the_block_says_it(
    haki: HakiClient, haki_server: Server
):
    subject = f"lc-{uuid.uuid4().hex[:10]}"
    said = [{"role": "user", "name": "Ana", "message_id": "1",
             "content": "Please ship my order to the Porto warehouse.",
             "occurred_at": "2026-11-20T10:07:30Z"},
            {"role": "assistant", "message_id": "2",
             "content": "Done: your order ships to the Porto warehouse.",
             "occurred_at": "2026-11-20T10:08:00Z"}]
    written = Client(haki_server.url).request(
        "POST", "/v1/events", key=haki_server.key,
        body={"project_id": DEMO_PROJECT, "subject_id": subject, "thread_id": "order-7",
              "messages": said})
    assert written.status == 201, written.json
    ids = [w["id"] for w in written.json["events"]]

    found = HakiRetriever(client=haki, subject_id=subject).invoke("Porto warehouse order")
    episodes = {d.metadata["id"]: d for d in found if d.metadata["kind"] == "episode"}
    assert set(episodes) == set(ids)
    assert episodes[ids[0]].page_content == said[0]["content"]
    assert (episodes[ids[0]].metadata["role"], episodes[ids[0]].metadata["name"]) == (
        "user", "Ana")
    assert (episodes[ids[1]].metadata["role"], episodes[ids[1]].metadata["name"]) == (
        "assistant", None)
    assert {d.metadata["thread_id"] for d in episodes.values()} == {"order-7"}
    assert HakiRetriever(client=haki, subject_id=subject, thread_id="other").invoke(
        "Porto warehouse order") == [], "a thread narrows the episodes"

    (block,) = HakiRetriever(client=haki, subject_id=subject, block=True).invoke(
        "Porto warehouse order")
    assert block.metadata["kind"] == "block"
    lines = block.page_content.split("\n")
    assert lines == ["<haki_memory>", "## 2026-11-20 · order-7",
                     f"[e1] Ana: {said[0]['content']}",
                     f"[e2] assistant: {said[1]['content']}", "</haki_memory>"]


def test_an_unknown_subject_is_no_document(haki: HakiClient):
    subject = f"nobody-{uuid.uuid4().hex[:10]}"
    assert HakiRetriever(client=haki, subject_id=subject).invoke(QUERY) == []
    assert HakiRetriever(client=haki, subject_id=subject, block=True).invoke(QUERY) == []


def test_ainvoke_uses_the_async_client_or_the_sync_one(haki: HakiClient, haki_server: Server):
    async def both() -> tuple[list[Document], list[Document]]:
        async with AsyncHakiClient(haki_server.url, haki_server.key,
                                   project_id=DEMO_PROJECT) as client:
            native = await HakiRetriever(async_client=client, subject_id=DEMO_SUBJECT,
                                         budget_tokens=400).ainvoke(QUERY)
        threaded = await HakiRetriever(client=haki, subject_id=DEMO_SUBJECT,
                                       budget_tokens=400).ainvoke(QUERY)
        return native, threaded

    native, threaded = asyncio.run(both())
    assert native and [d.metadata["id"] for d in native] == [
        d.metadata["id"] for d in threaded]
    assert native[0].metadata["trace_id"] != threaded[0].metadata["trace_id"]


def test_a_retriever_without_a_client_says_so():
    with pytest.raises(ValueError, match="needs a client"):
        HakiRetriever(subject_id=DEMO_SUBJECT).invoke(QUERY)


def test_the_subject_and_settings_come_from_the_calls_config(haki: HakiClient,
                                                             haki_server: Server):
    """One retriever (or a chain holding it) serves every subject: ``configurable`` wins."""
    retriever = HakiRetriever(client=haki, subject_id="nobody-by-default", purpose="default")
    ana = f"lc-{uuid.uuid4().hex[:10]}"
    haki.record_fact(ana, "preferred_city", "Porto")
    config = {"configurable": {"subject_id": ana, "purpose": "per_call", "budget_tokens": 300,
                               "thread_id": "ignored"}}
    found = retriever.invoke("Which city?", config=config)
    assert [d.page_content for d in found] == ["preferred city: Porto"]
    trace = haki.inspect(found[0].metadata["trace_id"])
    assert (trace.subject_id, trace.purpose, trace.budget_tokens) == (ana, "per_call", 300)
    assert retriever.invoke("Which city?") == []  # the retriever's own subject knows nothing
    # Through a chain, and asynchronously (thread and async client alike).
    chain = retriever | (lambda docs: [d.page_content for d in docs])
    assert chain.invoke("Which city?", config=config) == ["preferred city: Porto"]

    async def both() -> tuple[list[Document], list[Document]]:
        threaded = await HakiRetriever(client=haki).ainvoke("Which city?", config=config)
        async with AsyncHakiClient(haki_server.url, haki_server.key) as client:
            native = await HakiRetriever(async_client=client).ainvoke("Which city?",
                                                                      config=config)
        return threaded, native

    threaded, native = asyncio.run(both())
    assert [d.page_content for d in threaded] == [d.page_content for d in native] == [
        "preferred city: Porto"]
    with pytest.raises(ValueError, match="needs a subject"):
        HakiRetriever(client=haki).invoke("Which city?")
