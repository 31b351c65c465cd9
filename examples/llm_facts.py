"""Facts extracted by your own model, written through Haki: what Mem0's ``add()`` does with its
built-in extraction, done with your LLM, your prompt and your vocabulary of predicates.

    make run                                   # in another terminal: prints the dev key
    export HAKI_API_KEY=hk_...                 # and HAKI_URL if not http://127.0.0.1:8787
    export LLM_URL=https://api.openai.com/v1 LLM_API_KEY=sk-... LLM_MODEL=gpt-4o-mini
    .venv/bin/python examples/llm_facts.py     # a demo conversation with Ana

Any OpenAI-compatible chat-completions endpoint works (``LLM_URL=http://localhost:11434/v1``
for Ollama, with no key). Four steps:

1. the conversation is stored as events (``write_messages``: one ``conversation.message``
   event per message, idempotent by ``message_id``, so running it twice stores it once);
2. your model reads the messages and answers facts as JSON: ``predicate``, ``value``,
   ``confidence``, ``volatility`` and the ``message_ids`` it read them in;
3. each fact is checked (the model's output is data, never trusted) and written with
   ``record_fact``, its ``source_event_ids`` the events of those messages; Haki decides what
   it does: ``created``, ``reinforced`` (the same value again), ``superseded`` or
   ``conflict`` (a competing value, left for a person or your code to settle);
4. the next context call serves them, with their sources.
"""

import argparse
import json
import os
import re
import sys
from collections.abc import Sequence
from typing import Any

import httpx

from haki_client import HakiClient, HakiError, render

DEMO_MESSAGES = [
    {"message_id": "m-41", "role": "user", "name": "Ana",
     "content": "I just moved to Porto, please send my invoices there from now on."},
    {"message_id": "m-42", "role": "assistant", "content": "Noted: invoices go to Porto."},
    {"message_id": "m-43", "role": "user", "name": "Ana",
     "content": "And write to me in Portuguese please, my English is not great."},
]
EXTRACTION_PROMPT = """\
You extract durable facts about the user from a conversation, for a support agent's memory.
Answer one JSON object: {"facts": [{"predicate": "...", "value": ..., "confidence": 0.0-1.0,
"volatility": "stable|slow|volatile|ephemeral", "message_ids": ["..."]}]}.
Predicates are snake_case names of what the fact is about, from this list when one fits:
preferred_language, billing_city, contact_channel, employer. A value is a string, number or
small object. Only facts the user stated; none from the assistant's words alone. No facts: an
empty list."""
VOLATILITIES = {"stable", "slow", "volatile", "ephemeral"}
PREDICATE = re.compile(r"[a-z][a-z0-9_]{0,63}")


def extract_facts(messages: Sequence[dict[str, Any]], *, url: str, model: str,
                  api_key: str | None) -> list[dict[str, Any]]:
    """Ask the model for the facts of ``messages``; its raw list (checked by the caller)."""
    transcript = "\n".join(f"[{m['message_id']}] {m['role']}: {m['content']}" for m in messages)
    response = httpx.post(
        f"{url.rstrip('/')}/chat/completions",
        headers={"Authorization": f"Bearer {api_key}"} if api_key else {},
        json={"model": model, "temperature": 0, "response_format": {"type": "json_object"},
              "messages": [{"role": "system", "content": EXTRACTION_PROMPT},
                           {"role": "user", "content": transcript}]},
        timeout=60)
    response.raise_for_status()
    content = response.json()["choices"][0]["message"]["content"]
    facts = json.loads(content).get("facts", [])
    return facts if isinstance(facts, list) else []


def checked(fact: Any, event_ids: dict[str, str]) -> dict[str, Any] | str:
    """The keywords of ``record_fact`` for one extracted fact, or why it is refused."""
    if not isinstance(fact, dict):
        return "not an object"
    predicate, value = fact.get("predicate"), fact.get("value")
    confidence = fact.get("confidence", 0.5)
    volatility = fact.get("volatility", "stable")
    sources = fact.get("message_ids") or []
    if not isinstance(predicate, str) or not PREDICATE.fullmatch(predicate):
        return f"predicate {predicate!r} is not a snake_case name"
    if value in (None, "", [], {}):
        return f"{predicate}: no value"
    if not isinstance(confidence, int | float) or not 0 <= confidence <= 1:
        return f"{predicate}: confidence {confidence!r} is not within 0..1"
    if volatility not in VOLATILITIES:
        return f"{predicate}: volatility {volatility!r} is not one of {sorted(VOLATILITIES)}"
    if not isinstance(sources, list) or not sources or any(s not in event_ids for s in sources):
        return f"{predicate}: message_ids {sources!r} are not messages of this conversation"
    return {"predicate": predicate, "value": value, "confidence": float(confidence),
            "volatility": volatility, "source_event_ids": [event_ids[s] for s in sources]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--subject", default="user-ana", help="whom the conversation is with")
    parser.add_argument("--project", default=os.environ.get("HAKI_PROJECT_ID", "acme-support"))
    parser.add_argument("--llm-url",
                        default=os.environ.get("LLM_URL", "https://api.openai.com/v1"))
    parser.add_argument("--model", default=os.environ.get("LLM_MODEL", "gpt-4o-mini"))
    args = parser.parse_args(argv)

    with HakiClient(project_id=args.project) as haki:  # HAKI_URL, HAKI_API_KEY
        # 1. The conversation, stored once whatever the retries or re-runs.
        stored = haki.write_messages(args.subject, DEMO_MESSAGES)
        event_ids = {m["message_id"]: str(e.id) for m, e in zip(DEMO_MESSAGES, stored.events,
                                                                 strict=True)}
        # 2. Your model, your prompt.
        extracted = extract_facts(DEMO_MESSAGES, url=args.llm_url, model=args.model,
                                  api_key=os.environ.get("LLM_API_KEY"))
        # 3. Checked, then written: Haki keeps the history, reinforcement and conflicts.
        for fact in extracted:
            keywords = checked(fact, event_ids)
            if isinstance(keywords, str):
                print(f"skipped: {keywords}", file=sys.stderr)
                continue
            try:
                written = haki.record_fact(args.subject, **keywords)
            except HakiError as error:  # e.g. a value the service refuses: 422 with the field
                print(f"refused: {keywords['predicate']}: {error.code}: {error}",
                      file=sys.stderr)
                continue
            print(f"{written.outcome}: {keywords['predicate']} = "
                  f"{json.dumps(keywords['value'], ensure_ascii=False)} "
                  f"(confidence {keywords['confidence']:.2f}, fact {written.id})")
        # 4. What the agent gets on its next turn.
        answer = haki.context(args.subject, "Where do invoices go, and in which language?",
                              purpose="support_reply", render=True)
        print(render(answer))
    return 0


if __name__ == "__main__":
    sys.exit(main())
