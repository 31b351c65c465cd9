"""A LangChain retriever over Haki's context assembly (``pip install haki-client[langchain]``).

```python
from haki_client import HakiClient
from haki_client.langchain import HakiRetriever

haki = HakiClient(project_id="acme-support")              # HAKI_URL, HAKI_API_KEY
retriever = HakiRetriever(client=haki, subject_id="user-marie", purpose="support_reply")
documents = retriever.invoke("Which language should we write to Marie in?")
```

One call of the retriever is one ``POST /v1/context``: the service chooses what fits the budget
(facts, then episodes, as the packet orders them: each conversation thread's and day's in the
order they were said) and records why in the trace. Each served
fact or episode becomes a :class:`~langchain_core.documents.Document` whose metadata carries
its id, its ``kind`` (``fact`` or ``episode``) and the call's ``trace_id`` (for
``client.inspect``); with ``block=True`` the retriever returns one document, the rendered
``<haki_memory>`` block, ready for a prompt. An empty packet is no document.

The subject (and ``purpose``, ``budget_tokens``, ``project_id``) may change per call, through
LangChain's run configuration, so one retriever (or one chain holding it) serves every user:

```python
retriever = HakiRetriever(client=haki, purpose="support_reply")
documents = retriever.invoke(question, config={"configurable": {"subject_id": "user-ana"}})
```

Haki does not extract facts from the conversation: write them with ``client.record_fact``.
"""

import json
from typing import Any

from langchain_core.callbacks import (
    AsyncCallbackManagerForRetrieverRun,
    CallbackManagerForRetrieverRun,
)
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import RunnableConfig
from langchain_core.runnables.config import run_in_executor
from pydantic import ConfigDict, Field

from haki_client.client import AsyncHakiClient, HakiClient
from haki_client.models import ContextResponse, PacketEpisode, PacketFact

__all__ = ["CONFIGURABLE", "HakiRetriever", "documents"]

#: The retriever's settings a call may give in ``config["configurable"]``.
CONFIGURABLE = ("subject_id", "purpose", "budget_tokens", "thread_id", "project_id")


def _value_text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _fact(fact: PacketFact, common: dict[str, Any]) -> Document:
    return Document(
        page_content=f"{fact.predicate.replace('_', ' ')}: {_value_text(fact.value)}",
        metadata={**common, "kind": "fact", "id": str(fact.id), "predicate": fact.predicate,
                  "confidence": fact.confidence,
                  "valid_from": fact.valid_from.isoformat() if fact.valid_from else None,
                  "source_event_ids": [str(source) for source in fact.source_event_ids],
                  "unconfirmed": fact.unconfirmed})


def _episode(episode: PacketEpisode, common: dict[str, Any]) -> Document:
    return Document(
        page_content=episode.excerpt,
        metadata={**common, "kind": "episode", "id": str(episode.event_id),
                  "event_kind": episode.kind, "occurred_at": episode.occurred_at.isoformat(),
                  "role": episode.role, "name": episode.name, "thread_id": episode.thread_id})


def documents(answer: ContextResponse, *, block: bool = False) -> list[Document]:
    """An answer of ``POST /v1/context`` as documents: one per fact and episode, in the
    packet's order; with ``block``, the rendered block alone (the answer must hold it)."""
    common = {"trace_id": str(answer.trace_id), "status": answer.packet.status}
    if block:
        if answer.block is None:
            raise ValueError("the answer holds no block: ask the context call to render it")
        return [Document(page_content=answer.block, metadata={**common, "kind": "block"})
                ] if answer.block else []
    return ([_fact(fact, common) for fact in answer.packet.facts]
            + [_episode(episode, common) for episode in answer.packet.episodes])


class HakiRetriever(BaseRetriever):
    """Documents of one subject's memory for a query (``POST /v1/context``).

    ``client`` serves :meth:`invoke`, ``async_client`` :meth:`ainvoke` (without one,
    ``ainvoke`` runs the sync client in a worker thread, as LangChain does by default). The
    settings of :data:`CONFIGURABLE` given in a call's ``config["configurable"]`` override
    the retriever's own for that call.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    client: HakiClient | None = None
    async_client: AsyncHakiClient | None = None
    #: None: each call names it (``config={"configurable": {"subject_id": …}}``).
    subject_id: str | None = None
    #: Why the memory is asked for (recorded in the trace; without one the packet warns).
    purpose: str | None = "langchain_retriever"
    #: The budget in tokens; None: the service's default. It bounds the rendered block
    #: (tags and headers included) whether or not ``block`` asks for it.
    budget_tokens: int | None = Field(default=None, gt=0)
    #: Only the episodes of this conversation thread (the facts stay the subject's).
    thread_id: str | None = None
    #: Return the rendered ``<haki_memory>`` block as one document.
    block: bool = False
    #: None: the client's project.
    project_id: str | None = None

    def invoke(self, input: str, config: RunnableConfig | None = None,
               **kwargs: Any) -> list[Document]:
        return super().invoke(input, config, **_configured(config), **kwargs)

    async def ainvoke(self, input: str, config: RunnableConfig | None = None,
                      **kwargs: Any) -> list[Document]:
        return await super().ainvoke(input, config, **_configured(config), **kwargs)

    def _call(self, overrides: dict[str, Any]) -> dict[str, Any]:
        """The context call's settings: the retriever's, with this call's overrides."""
        settings = {name: overrides.get(name, getattr(self, name)) for name in CONFIGURABLE}
        if not settings["subject_id"]:
            raise ValueError("HakiRetriever needs a subject: set subject_id, or pass "
                             "config={'configurable': {'subject_id': ...}} to the call")
        return settings

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun, **overrides: Any
    ) -> list[Document]:
        if self.client is None:
            raise ValueError("HakiRetriever needs a client (HakiClient) to run synchronously")
        call = self._call(overrides)
        answer = self.client.context(
            call["subject_id"], query, purpose=call["purpose"],
            budget_tokens=call["budget_tokens"], render=self.block,
            thread_id=call["thread_id"], project_id=call["project_id"])
        return documents(answer, block=self.block)

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun,
        **overrides: Any
    ) -> list[Document]:
        if self.async_client is None:
            return await run_in_executor(None, self._get_relevant_documents, query,
                                         run_manager=run_manager.get_sync(), **overrides)
        call = self._call(overrides)
        answer = await self.async_client.context(
            call["subject_id"], query, purpose=call["purpose"],
            budget_tokens=call["budget_tokens"], render=self.block,
            thread_id=call["thread_id"], project_id=call["project_id"])
        return documents(answer, block=self.block)


def _configured(config: RunnableConfig | None) -> dict[str, Any]:
    """The retriever's settings a call's ``config["configurable"]`` gives."""
    configurable = (config or {}).get("configurable") or {}
    return {name: configurable[name] for name in CONFIGURABLE if name in configurable}
