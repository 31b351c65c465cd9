"""Sync and async clients of the Haki API, on httpx.

Both share one policy (:class:`_Policy`): how a request is built, which failures are retried
and after how long, how an answer becomes a model or a :class:`HakiError`, and when a context
call fails open. Only the sending and the sleeping differ.

Retries: up to ``max_retries`` more attempts, after a "full jitter" exponential backoff
(a uniform draw in ``[0, min(max_backoff, backoff × 2^attempt)]``, at least what a
``Retry-After`` header asks, capped at ``max_backoff``), on

* a connection that could not be made (nothing was sent),
* ``429`` and ``503`` answers (throttled, or the memory store unreachable: no work was done),
* for idempotent operations only, also a read timeout, a dropped connection and ``502`` /
  ``504`` (the first attempt may have run).

Never on any other ``4xx``: the same request would get the same answer.
"""

import difflib
import json
import logging
import os
import random
import time
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, Generic, Literal, TypedDict, TypeVar, Unpack
from urllib.parse import quote
from uuid import UUID, uuid4

import anyio
import httpx
from pydantic import BaseModel
from pydantic import ValidationError as ModelError
from pydantic_core import to_jsonable_python

from haki_client import __version__
from haki_client.errors import (
    CONFIGURATION_ERROR,
    CONNECTION_ERROR,
    UNEXPECTED_RESPONSE,
    VALIDATION_ERROR,
    APIConnectionError,
    APITimeoutError,
    HakiError,
    error_for,
)
from haki_client.models import (
    CallDetail,
    CallFeedback,
    CallPage,
    ConflictPage,
    ContextPacket,
    ContextResponse,
    Error,
    EvalSet,
    EventIn,
    EventPage,
    EventsResponse,
    EventWritten,
    FactIn,
    FactPage,
    FactsResponse,
    FactStatusResponse,
    FactWritten,
    ForgetResponse,
    Health,
    InspectResponse,
    MessageIn,
    ResolveResponse,
    StatsOverview,
    StatsSeries,
    SubjectPage,
)
from haki_client.operations import (
    CALL,
    CONTEXT,
    EVAL_SET,
    FEEDBACK,
    FORGET,
    HEALTH,
    INSPECT,
    LIST_CALLS,
    LIST_CONFLICTS,
    LIST_EVENTS,
    LIST_FACTS,
    LIST_SUBJECTS,
    READY,
    RESOLVE_CONFLICT,
    SET_FACT_STATUS,
    STATS_OVERVIEW,
    STATS_SERIES,
    WRITE_EVENTS,
    WRITE_FACTS,
    Operation,
)

logger = logging.getLogger("haki_client")

DEFAULT_URL = "http://127.0.0.1:8787"
#: Connect fast, read patiently: a context call is tens of milliseconds, a cold Lambda ~2 s.
DEFAULT_TIMEOUT = httpx.Timeout(10.0, connect=3.0)
DEFAULT_MAX_RETRIES = 2
DEFAULT_BACKOFF_S = 0.2
DEFAULT_MAX_BACKOFF_S = 2.0
#: The purpose a context call names unless told otherwise: a call without one is answered, but
#: its packet warns ``missing_purpose`` and reads ``degraded``.
DEFAULT_PURPOSE = "agent_context"

#: A fact's lifecycle status, a conflict set's, and what ``forget`` does.
FactStatus = Literal["candidate", "active", "superseded", "disputed", "disabled", "deleted"]
ConflictStatus = Literal["open", "resolved"]
ForgetMode = Literal["disable", "enable", "delete"]
#: The largest ``budget_tokens`` the service takes.
MAX_BUDGET_TOKENS = 100_000

#: A timeout: seconds for every phase, an ``httpx.Timeout``, or ``None`` for the client's.
TimeoutLike = float | httpx.Timeout | None

#: Statuses retried for every operation, and the ones retried only when it is idempotent.
RETRY_ALWAYS = frozenset({429, 503})
RETRY_IF_IDEMPOTENT = frozenset({502, 504})
#: Transport failures where nothing reached the service.
_NOT_SENT = (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout)

Model = TypeVar("Model", bound=BaseModel)


def empty_response(reason: str, render: bool = False) -> ContextResponse:
    """The packet a fail-open client returns when the service is down: nothing to inject
    (its block, when asked, is ""), one warning saying why, no trace."""
    return ContextResponse(
        packet=ContextPacket(
            facts=[], episodes=[], status="degraded", empty_reason=None,
            warnings=[f"haki_unavailable: {reason}; no memory was served (fail_open)"]),
        token_count=0, trace_id=None, block="" if render else None)


def render(answer: ContextResponse) -> str:
    """The ``<haki_memory>`` block of an answer to ``context(..., render=True)``, as the
    service rendered it (``answer.block``); "" for an empty packet."""
    if not isinstance(answer, ContextResponse):
        raise TypeError(f"render() takes the ContextResponse of context(..., render=True), "
                        f"not a {type(answer).__name__}")
    if answer.block is None:
        raise ValueError("this answer has no block: ask for it with context(..., render=True)")
    return answer.block


class _Policy:
    """Everything but the I/O: settings, requests, retry decisions, answers."""

    def __init__(
        self, url: str | None, api_key: str | None, project_id: str | None,
        timeout: float | httpx.Timeout | None, max_retries: int, backoff: float,
        max_backoff: float, fail_open: bool,
    ) -> None:
        self.url = (url or os.environ.get("HAKI_URL") or DEFAULT_URL).rstrip("/")
        if api_key is not None and not api_key.strip():
            # An explicit empty key is a mistake (an unset variable read into it), never a
            # request to use another key from the environment.
            raise error_for(CONFIGURATION_ERROR, "api_key is empty: pass the project's hk_ key")
        key = api_key if api_key is not None else os.environ.get("HAKI_API_KEY")
        if not key:
            raise error_for(CONFIGURATION_ERROR,
                            "no API key: pass api_key= or set HAKI_API_KEY")
        self.project_id = project_id or os.environ.get("HAKI_PROJECT_ID") or None
        self.timeout = DEFAULT_TIMEOUT if timeout is None else timeout
        if max_retries < 0:
            raise ValueError("max_retries must be >= 0")
        self.max_retries = max_retries
        self.backoff = backoff
        self.max_backoff = max_backoff
        self.fail_open = fail_open
        self.headers = {
            "Authorization": f"Bearer {key}",
            "Accept": "application/json",
            "User-Agent": f"haki-client-python/{__version__}",
        }

    # ------------------------------------------------------------------ requests

    def scope(self, project_id: str | None) -> str | None:
        return project_id or self.project_id

    def request(
        self, http: httpx.Client | httpx.AsyncClient, op: Operation, *,
        path: Mapping[str, Any] | None = None, query: Mapping[str, Any] | None = None,
        body: Mapping[str, Any] | None = None, timeout: TimeoutLike = None,
    ) -> httpx.Request:
        target = op.path
        for name in op.path_parameters():
            target = target.replace("{" + name + "}", quote(str((path or {})[name]), safe=""))
        params = {k: str(v) for k, v in (query or {}).items() if v is not None}
        headers = dict(self.headers)
        content = None
        if body is not None:
            payload = to_jsonable_python({k: v for k, v in body.items() if v is not None},
                                         exclude_none=True)
            content = json.dumps(payload, ensure_ascii=False).encode("utf-8")
            headers["Content-Type"] = "application/json"
        return http.build_request(op.method, self.url + target, params=params, headers=headers,
                                  content=content,
                                  timeout=self.timeout if timeout is None else timeout)

    # ------------------------------------------------------------------ retries

    def delay(self, attempt: int, retry_after: float = 0.0) -> float:
        ceiling = min(self.max_backoff, self.backoff * 2 ** attempt)
        return min(self.max_backoff, max(retry_after, random.uniform(0.0, ceiling)))

    def delay_after_error(self, op: Operation, exc: httpx.TransportError,
                          attempt: int) -> float | None:
        """Seconds to wait before the next attempt, ``None`` to give up."""
        if attempt >= self.max_retries:
            return None
        if isinstance(exc, _NOT_SENT) or op.idempotent:
            return self.delay(attempt)
        return None

    def delay_after_response(self, op: Operation, response: httpx.Response,
                             attempt: int) -> float | None:
        status = response.status_code
        if attempt >= self.max_retries:
            return None
        if status in RETRY_ALWAYS or (op.idempotent and status in RETRY_IF_IDEMPOTENT):
            return self.delay(attempt, _retry_after(response))
        return None

    def wait_after(self, op: Operation, outcome: httpx.Response | httpx.TransportError,
                   attempt: int) -> float | None:
        """Seconds to wait before sending again after ``outcome`` (a response, or the transport
        error that stood for one); ``None`` when it is the call's last (:meth:`answer`)."""
        if isinstance(outcome, httpx.TransportError):
            return self.delay_after_error(op, outcome, attempt)
        return self.delay_after_response(op, outcome, attempt)

    # ------------------------------------------------------------------ answers

    def answer(self, op: Operation, outcome: httpx.Response | httpx.TransportError,
               attempts: int) -> Any:
        """What a call returns after its last outcome: the response's model; its error, or
        the transport error after ``attempts`` attempts, raised."""
        if isinstance(outcome, httpx.TransportError):
            raise self.transport_error(outcome, attempts) from outcome
        return self.parse(op, outcome)

    def transport_error(self, exc: httpx.TransportError, attempts: int) -> HakiError:
        timed_out = isinstance(exc, httpx.TimeoutException)
        cls = APITimeoutError if timed_out else APIConnectionError
        return cls(CONNECTION_ERROR,
                   f"request to {self.url} {'timed out' if timed_out else 'failed'} after "
                   f"{attempts} attempt(s): {type(exc).__name__}")

    def parse(self, op: Operation, response: httpx.Response) -> Any:
        request_id = response.headers.get("x-amzn-RequestId")
        status = response.status_code
        if 200 <= status < 300:
            try:
                return op.response.model_validate_json(response.content)
            except ModelError as exc:
                raise error_for(UNEXPECTED_RESPONSE,
                                f"the {status} answer is not a {op.response.__name__}: "
                                f"{exc.error_count()} error(s)",
                                status=status, request_id=request_id) from exc
        try:
            error = Error.model_validate_json(response.content).error
        except ModelError:
            raise error_for(UNEXPECTED_RESPONSE,
                            f"HTTP {status} without the API's error body",
                            status=status, request_id=request_id) from None
        raise error_for(error.code, error.message, status=status, request_id=request_id)

    def fails_open(self, error: HakiError) -> bool:
        """A context call fails open when the service is down or overloaded, never on a
        mistake of the caller (401, 403, 422: fixing the call is the only cure)."""
        if not self.fail_open:
            return False
        if error.code == CONNECTION_ERROR:
            return True
        return error.status is not None and (error.status >= 500 or error.status == 429)

    def fallback(self, error: HakiError, render: bool) -> ContextResponse:
        logger.warning("haki: %s (status %s); serving an empty packet (fail_open)",
                       error.code, error.status)
        return empty_response(error.code, render)


def _retry_after(response: httpx.Response) -> float:
    value = response.headers.get("Retry-After", "")
    try:
        return max(0.0, float(value))
    except ValueError:
        return 0.0


Call = tuple[Operation, dict[str, Any]]
#: A feedback's verdict, and who gives it.
Verdict = Literal["helpful", "unhelpful", "wrong"]
Source = Literal["agent", "person"]
#: A moment as a query parameter: an aware ``datetime``, or RFC 3339 text with a time zone.
Moment = datetime | str
EventLike = EventIn | Mapping[str, Any]
FactLike = FactIn | Mapping[str, Any]
MessageLike = MessageIn | Mapping[str, Any]


def _record(model: type[Model], value: Model | Mapping[str, Any]) -> Model:
    """A record given as a model or a mapping; a mapping with an unknown field or a wrong type
    is refused here (``validation_error``) — bounds are the service's to check."""
    if isinstance(value, model):
        return value
    try:
        return model.model_validate(value)
    except ModelError as exc:
        raise error_for(VALIDATION_ERROR,
                        f"not a {model.__name__}: {_problem(model, exc)}") from None


def _problem(model: type[BaseModel], exc: ModelError) -> str:
    """The first problem of a record, naming its field (and the field meant, for a typo)."""
    error = exc.errors()[0]
    field = ".".join(str(part) for part in error["loc"]) or "(record)"
    if error["type"] == "extra_forbidden":
        near = difflib.get_close_matches(field, list(model.model_fields), n=1)
        hint = f" (did you mean {near[0]!r}?)" if near else ""
        return f"unknown field {field!r}{hint}"
    return f"field {field!r}: {error['msg']}"


def _budget(budget_tokens: object) -> int | None:
    """``budget_tokens`` as sent: a whole number of tokens, 1 to the service's maximum; any
    other value is the caller's mistake, refused before a request is made."""
    if budget_tokens is None:
        return None
    if (isinstance(budget_tokens, bool) or not isinstance(budget_tokens, int)
            or not 1 <= budget_tokens <= MAX_BUDGET_TOKENS):
        raise error_for(VALIDATION_ERROR,
                        f"budget_tokens must be a whole number of tokens from 1 to "
                        f"{MAX_BUDGET_TOKENS:,}, not {budget_tokens!r}")
    return budget_tokens


def _keyed(event: EventIn) -> EventIn:
    """The event with an idempotency key of its own unless it has an id or a key: a retried
    batch then stores each event once (the service returns the stored id)."""
    if event.id is not None or event.idempotency_key is not None:
        return event
    return event.model_copy(update={"idempotency_key": f"haki-client-{uuid4()}"})


def _dated(messages: Sequence[MessageIn]) -> list[MessageIn]:
    """The messages, each without ``id``, ``message_id`` or ``occurred_at`` dated now (one
    microsecond apart, in the list's order): its event id then derives from its speaker,
    content and that moment, and a retried request stores it once."""
    now = datetime.now(UTC)
    return [m if m.id is not None or m.message_id is not None or m.occurred_at is not None
            else m.model_copy(update={"occurred_at": now + timedelta(microseconds=i)})
            for i, m in enumerate(messages)]


class _Routes:
    """What each route sends, as ``(operation, parts)`` for the clients' ``_call``: one
    method per route, shared by the sync and the async client."""

    def __init__(self, policy: _Policy) -> None:
        self._policy = policy

    def _scope(self, project_id: str | None) -> str | None:
        return self._policy.scope(project_id)

    def context(self, subject_id: str, query: str, purpose: str | None,
                budget_tokens: int | None, render: bool, thread_id: str | None,
                project_id: str | None) -> Call:
        # ``render`` is sent only when asked: a request without it is what it always was.
        return CONTEXT, {"body": {
            "project_id": self._scope(project_id), "subject_id": subject_id, "query": query,
            "purpose": purpose, "budget_tokens": _budget(budget_tokens),
            "thread_id": thread_id, "render": render or None}}

    def inspect(self, trace_id: UUID | str, subject_id: str | None,
                project_id: str | None) -> Call:
        return INSPECT, {"path": {"trace_id": trace_id}, "query": {
            "project_id": self._scope(project_id), "subject_id": subject_id}}

    def stats_overview(self, subject_id: str | None, project_id: str | None) -> Call:
        return STATS_OVERVIEW, {"query": {
            "project_id": self._scope(project_id), "subject_id": subject_id}}

    def list_calls(self, filters: Mapping[str, Any], project_id: str | None) -> Call:
        unknown = sorted(set(filters) - set(LIST_CALLS.query))
        if unknown:
            raise TypeError(f"list_calls() got unexpected keyword(s): {', '.join(unknown)}")
        since, until = (_moment(filters.get(k)) for k in ("since", "until"))
        return LIST_CALLS, {"query": {**filters, "project_id": self._scope(project_id),
                                      "since": since, "until": until}}

    def get_call(self, trace_id: UUID | str, subject_id: str | None,
                 project_id: str | None) -> Call:
        return CALL, {"path": {"trace_id": trace_id}, "query": {
            "project_id": self._scope(project_id), "subject_id": subject_id}}

    def feedback(self, trace_id: UUID | str, subject_id: str, used: Sequence[UUID | str],
                 missing: Sequence[UUID | str], verdict: str | None, note: str | None,
                 source: str, project_id: str | None) -> Call:
        return FEEDBACK, {"path": {"trace_id": trace_id}, "body": {
            "project_id": self._scope(project_id), "subject_id": subject_id,
            "used": [str(i) for i in used], "missing": [str(i) for i in missing],
            "verdict": verdict, "note": note, "source": source}}

    def eval_set(self, since: Moment | None, until: Moment | None, limit: int | None,
                 project_id: str | None) -> Call:
        return EVAL_SET, {"query": {"project_id": self._scope(project_id),
                                    "since": _moment(since), "until": _moment(until),
                                    "limit": limit}}

    def stats_series(self, subject_id: str | None, days: int | None, granularity: str | None,
                     project_id: str | None) -> Call:
        return STATS_SERIES, {"query": {
            "project_id": self._scope(project_id), "subject_id": subject_id, "days": days,
            "granularity": granularity}}

    def list_events(self, subject_id: str, thread_id: str | None, cursor: str | None,
                    limit: int | None, project_id: str | None) -> Call:
        return LIST_EVENTS, {"query": {
            "project_id": self._scope(project_id), "subject_id": subject_id,
            "thread_id": thread_id, "cursor": cursor, "limit": limit}}

    def list_subjects(self, cursor: str | None, limit: int | None,
                      project_id: str | None) -> Call:
        return LIST_SUBJECTS, {"query": {
            "project_id": self._scope(project_id), "cursor": cursor, "limit": limit}}

    def write_events(self, events: Sequence[EventLike], project_id: str | None) -> Call:
        records = [_keyed(_record(EventIn, e)).model_dump(mode="json", exclude_none=True)
                   for e in events]
        return WRITE_EVENTS, {"body": {"project_id": self._scope(project_id),
                                       "events": records}}

    def write_messages(self, subject_id: str, messages: Sequence[MessageLike],
                       thread_id: str | None, project_id: str | None) -> Call:
        records = [m.model_dump(mode="json", exclude_none=True)
                   for m in _dated([_record(MessageIn, m) for m in messages])]
        return WRITE_EVENTS, {"body": {"project_id": self._scope(project_id),
                                       "subject_id": subject_id, "thread_id": thread_id,
                                       "messages": records}}

    def write_facts(self, facts: Sequence[FactLike], project_id: str | None) -> Call:
        records = [_record(FactIn, f).model_dump(mode="json", exclude_unset=True)
                   for f in facts]
        return WRITE_FACTS, {"body": {"project_id": self._scope(project_id), "facts": records}}

    def list_facts(self, subject_id: str, status: FactStatus | None, predicate: str | None,
                   cursor: str | None, limit: int | None, project_id: str | None) -> Call:
        return LIST_FACTS, {"query": {
            "project_id": self._scope(project_id), "subject_id": subject_id, "status": status,
            "predicate": predicate, "cursor": cursor, "limit": limit}}

    def set_fact_status(self, fact_id: UUID | str, status: FactStatus,
                        project_id: str | None) -> Call:
        return SET_FACT_STATUS, {"path": {"fact_id": fact_id}, "body": {
            "project_id": self._scope(project_id), "status": status}}

    def list_conflicts(self, subject_id: str | None, status: ConflictStatus | None,
                       cursor: str | None,
                       limit: int | None, project_id: str | None) -> Call:
        return LIST_CONFLICTS, {"query": {
            "project_id": self._scope(project_id), "subject_id": subject_id, "status": status,
            "cursor": cursor, "limit": limit}}

    def resolve_conflict(self, conflict_id: UUID | str, keep_fact_id: UUID | str,
                         project_id: str | None) -> Call:
        return RESOLVE_CONFLICT, {"path": {"conflict_id": conflict_id}, "body": {
            "project_id": self._scope(project_id), "keep_fact_id": keep_fact_id}}

    def forget(self, mode: ForgetMode, subject_id: str | None, fact_id: UUID | str | None,
               project_id: str | None) -> Call:
        return FORGET, {"body": {"project_id": self._scope(project_id), "mode": mode,
                                 "subject_id": subject_id, "fact_id": fact_id}}

    def health(self, ready: bool) -> Call:
        return (READY if ready else HEALTH), {}


class CallFilters(TypedDict, total=False):
    """The keywords of :meth:`HakiClient.list_calls`: which calls, and which page of them."""

    #: Calls of this subject only.
    subject_id: str
    #: Text the query or the subject id contains (any case).
    q: str
    status: Literal["ok", "degraded"]
    #: Code of a warning the packet carries, e.g. ``open_conflict``.
    warning: str
    #: Why the packet was empty; ``served``: calls whose packet was not.
    empty_reason: Literal["no_memory", "no_relevant_memory", "all_filtered", "served"]
    purpose: str
    #: ``any``: calls with feedback; ``missing``: calls whose feedback names missing memory.
    feedback: Literal["any", "missing"]
    #: Calls made at or after / before this moment (aware ``datetime`` or ISO 8601 text).
    since: Moment
    until: Moment
    #: ``next_cursor`` of the previous page.
    cursor: str
    #: Calls per page, 1 to 200 (the service's default is 50).
    limit: int


def _moment(value: Moment | None) -> str | None:
    """A ``since`` / ``until`` as the service reads it: ISO 8601 (``str()`` of a datetime puts
    a space where the ``T`` goes)."""
    return value.isoformat() if isinstance(value, datetime) else value


def _event(subject_id: str, kind: str, text: str | None, payload: Mapping[str, Any] | None,
           occurred_at: datetime | None, idempotency_key: str | None,
           thread_id: str | None) -> EventIn:
    body = dict(payload or {})
    if text is not None:
        body["text"] = text
    return EventIn(subject_id=subject_id, kind=kind, payload=body, occurred_at=occurred_at,
                   idempotency_key=idempotency_key, thread_id=thread_id)


HttpClient = TypeVar("HttpClient", httpx.Client, httpx.AsyncClient)


class _Client(Generic[HttpClient]):
    """What the sync and the async client are made of: one policy, the routes, and the httpx
    client they send with (their own, closed with them, unless one is given)."""

    #: The httpx client made when none is given.
    _http_class: type[HttpClient]

    def __init__(
        self, url: str | None = None, api_key: str | None = None, *,
        project_id: str | None = None, timeout: float | httpx.Timeout | None = None,
        max_retries: int = DEFAULT_MAX_RETRIES, backoff: float = DEFAULT_BACKOFF_S,
        max_backoff: float = DEFAULT_MAX_BACKOFF_S, fail_open: bool = False,
        http_client: HttpClient | None = None,
    ) -> None:
        self._policy = _Policy(url, api_key, project_id, timeout, max_retries, backoff,
                               max_backoff, fail_open)
        self._routes = _Routes(self._policy)
        self._http: HttpClient = http_client or self._http_class()
        self._owns_http = http_client is None

    @property
    def url(self) -> str:
        return self._policy.url


class HakiClient(_Client[httpx.Client]):
    """Synchronous client. ``url``, ``api_key`` and ``project_id`` default to ``HAKI_URL``
    (else ``http://127.0.0.1:8787``), ``HAKI_API_KEY`` and ``HAKI_PROJECT_ID``.

    With ``fail_open=True``, :meth:`context` returns an empty packet (its block, when asked,
    "") and logs a warning when the service cannot be reached or answers 5xx / 429 after the
    retries; every other call, and every 4xx, raises :class:`HakiError` (a subclass per status
    family: :mod:`haki_client.errors`).

    ``timeout`` (seconds, or an ``httpx.Timeout``) bounds each attempt of every call; each
    method also takes ``timeout=`` for that call alone. :meth:`context` names the purpose
    ``DEFAULT_PURPOSE`` unless given one (``purpose=None`` sends none: the packet then warns
    ``missing_purpose``).
    """

    _http_class = httpx.Client

    def close(self) -> None:
        if self._owns_http:
            self._http.close()

    def __enter__(self) -> "HakiClient":
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _call(self, op: Operation, parts: dict[str, Any], timeout: TimeoutLike = None) -> Any:
        request = self._policy.request(self._http, op, timeout=timeout, **parts)
        attempt = 0
        while True:
            outcome = self._send(request)
            wait = self._policy.wait_after(op, outcome, attempt)
            if wait is None:
                return self._policy.answer(op, outcome, attempt + 1)
            time.sleep(wait)
            attempt += 1

    def _send(self, request: httpx.Request) -> httpx.Response | httpx.TransportError:
        try:
            return self._http.send(request)
        except httpx.TransportError as exc:
            return exc

    # ------------------------------------------------------------------ routes

    def context(
        self, subject_id: str, query: str, *, purpose: str | None = DEFAULT_PURPOSE,
        budget_tokens: int | None = None, render: bool = False, thread_id: str | None = None,
        project_id: str | None = None, timeout: TimeoutLike = None,
    ) -> ContextResponse:
        """``POST /v1/context``: the packet for ``subject_id`` and ``query``; with
        ``render=True`` also the prompt-ready ``<haki_memory>`` block (``answer.block``).
        ``budget_tokens`` bounds that block, tags and headers included, whether or not it is
        asked for. ``thread_id`` narrows the episodes to one conversation thread (the facts
        stay the subject's)."""
        try:
            return self._call(*self._routes.context(subject_id, query, purpose, budget_tokens,
                                                    render, thread_id, project_id),
                              timeout=timeout)
        except HakiError as error:
            if self._policy.fails_open(error):
                return self._policy.fallback(error, render)
            raise

    def inspect(self, trace_id: UUID | str, *, subject_id: str | None = None,
                project_id: str | None = None,
        timeout: TimeoutLike = None) -> InspectResponse:
        """``GET /v1/inspect/{trace_id}``: the call and every decision of its trace
        (``subject_id`` is optional: trace ids are unique; given, it must be the call's)."""
        return self._call(*self._routes.inspect(trace_id, subject_id, project_id), timeout=timeout)

    def stats_overview(self, *, subject_id: str | None = None,
                       project_id: str | None = None,
        timeout: TimeoutLike = None) -> StatsOverview:
        """``GET /v1/stats/overview``: usage figures of the project (or one subject)."""
        return self._call(*self._routes.stats_overview(subject_id, project_id), timeout=timeout)

    def stats_series(self, *, subject_id: str | None = None, days: int | None = None,
                     granularity: Literal["hour", "day"] | None = None,
                     project_id: str | None = None, timeout: TimeoutLike = None) -> StatsSeries:
        """``GET /v1/stats/series``: calls, injection rate, latency and tokens per hour or day
        over the last ``days`` (the service's defaults: 7, ``hour``)."""
        return self._call(*self._routes.stats_series(subject_id, days, granularity, project_id),
                          timeout=timeout)

    def list_calls(self, *, project_id: str | None = None, timeout: TimeoutLike = None,
                   **filters: Unpack[CallFilters]) -> CallPage:
        """``GET /v1/calls``: a page of past context calls, newest first, filtered by the
        keywords of :class:`CallFilters`; pass ``next_cursor`` on as ``cursor``."""
        return self._call(*self._routes.list_calls(filters, project_id), timeout=timeout)

    def get_call(self, trace_id: UUID | str, *, subject_id: str | None = None,
                 project_id: str | None = None, timeout: TimeoutLike = None) -> CallDetail:
        """``GET /v1/calls/{trace_id}``: one call's trace, ranking, the current text of each
        candidate and the rendered block."""
        return self._call(*self._routes.get_call(trace_id, subject_id, project_id),
                          timeout=timeout)

    def feedback(self, trace_id: UUID | str, *, subject_id: str,
                 used: Sequence[UUID | str] = (), missing: Sequence[UUID | str] = (),
                 verdict: Verdict | None = None, note: str | None = None,
                 source: Source = "agent", project_id: str | None = None,
                 timeout: TimeoutLike = None) -> CallFeedback:
        """``POST /v1/calls/{trace_id}/feedback``: which served items the answer ``used`` and
        which of the subject's facts or events were ``missing`` (ids; map the handles a model
        cites with :func:`haki_client.cited_ids`). A repeat from the same ``source``
        replaces."""
        return self._call(*self._routes.feedback(trace_id, subject_id, used, missing, verdict,
                                                 note, source, project_id), timeout=timeout)

    def eval_set(self, *, since: Moment | None = None, until: Moment | None = None,
                 limit: int | None = None, project_id: str | None = None,
                 timeout: TimeoutLike = None) -> EvalSet:
        """``GET /v1/eval-set``: the project's calls with feedback as a labelled set; write
        ``answer.model_dump_json()`` to a file and run ``haki eval`` on it."""
        return self._call(*self._routes.eval_set(since, until, limit, project_id),
                          timeout=timeout)

    def list_events(self, subject_id: str, *, thread_id: str | None = None,
                    cursor: str | None = None, limit: int | None = None,
                    project_id: str | None = None, timeout: TimeoutLike = None) -> EventPage:
        """``GET /v1/events``: a page of the subject's episodes (of one thread, with
        ``thread_id``), newest first, those of one time in the order written; pass
        ``next_cursor`` on."""
        return self._call(*self._routes.list_events(subject_id, thread_id, cursor, limit,
                                                    project_id), timeout=timeout)

    def list_subjects(self, *, cursor: str | None = None, limit: int | None = None,
                      project_id: str | None = None,
                      timeout: TimeoutLike = None) -> SubjectPage:
        """``GET /v1/subjects``: a page of the project's subjects (by id, each with its counts
        and last activity); pass ``next_cursor`` on."""
        return self._call(*self._routes.list_subjects(cursor, limit, project_id),
                          timeout=timeout)

    def write_events(self, events: Sequence[EventLike], *,
                     project_id: str | None = None,
        timeout: TimeoutLike = None) -> EventsResponse:
        """``POST /v1/events``: store 1 to 100 episodes (each gets an idempotency key unless
        it has an id or a key)."""
        return self._call(*self._routes.write_events(events, project_id), timeout=timeout)

    def remember_event(
        self, subject_id: str, text: str | None = None, *, kind: str = "conversation.message",
        payload: Mapping[str, Any] | None = None, occurred_at: datetime | None = None,
        idempotency_key: str | None = None, thread_id: str | None = None,
        project_id: str | None = None, timeout: TimeoutLike = None,
    ) -> EventWritten:
        """One episode (``text`` goes in ``payload["text"]``), of ``thread_id`` when given;
        see :meth:`write_events`."""
        event = _event(subject_id, kind, text, payload, occurred_at, idempotency_key,
                       thread_id)
        return self.write_events([event], project_id=project_id, timeout=timeout).events[0]

    def write_messages(self, subject_id: str, messages: Sequence[MessageLike], *,
                       thread_id: str | None = None, project_id: str | None = None,
                       timeout: TimeoutLike = None) -> EventsResponse:
        """``POST /v1/events`` with ``messages``: a turn or a whole conversation of
        ``subject_id`` (of one ``thread_id`` when given), 1 to 100 messages (dicts or
        :class:`MessageIn`: ``role``, ``content``, and optionally ``name``, ``occurred_at``,
        ``message_id`` or ``id``), each stored as a ``conversation.message`` event and read
        back in the order listed; one entry per message in the answer, in order.

        Idempotent per message: give each one a ``message_id`` (your id of it, unique in the
        subject) or an ``id`` (a UUID), and a retry, even a later one, answers
        ``deduplicated`` with the same ids. A message without either is keyed by its speaker,
        content and ``occurred_at`` (now when not given, so only this call's own retries are
        recognised: writing it again later stores it again)."""
        return self._call(*self._routes.write_messages(subject_id, messages, thread_id,
                                                       project_id), timeout=timeout)

    def write_facts(self, facts: Sequence[FactLike], *,
                    project_id: str | None = None,
        timeout: TimeoutLike = None) -> FactsResponse:
        """``POST /v1/facts``: record 1 to 100 facts (created, reinforced, superseded or put
        in conflict, by the service's rules)."""
        return self._call(*self._routes.write_facts(facts, project_id), timeout=timeout)

    def record_fact(self, subject_id: str, predicate: str, value: Any, *,
                    project_id: str | None = None, timeout: TimeoutLike = None,
                    **fields: Any) -> FactWritten:
        """One fact (``confidence``, ``volatility``, ``valid_from``, … as keywords)."""
        fact = _record(FactIn, {"subject_id": subject_id, "predicate": predicate,
                                "value": value, **fields})
        return self.write_facts([fact], project_id=project_id, timeout=timeout).facts[0]

    def list_facts(self, subject_id: str, *, status: FactStatus | None = None,
                   predicate: str | None = None, cursor: str | None = None,
                   limit: int | None = None, project_id: str | None = None,
        timeout: TimeoutLike = None) -> FactPage:
        """``GET /v1/facts``: a page of the subject's facts; pass ``next_cursor`` on."""
        return self._call(*self._routes.list_facts(subject_id, status, predicate, cursor,
                                                   limit, project_id), timeout=timeout)

    def set_fact_status(self, fact_id: UUID | str, status: FactStatus, *,
                        project_id: str | None = None,
        timeout: TimeoutLike = None) -> FactStatusResponse:
        """``POST /v1/facts/{fact_id}/status``: move a fact along its lifecycle."""
        return self._call(*self._routes.set_fact_status(fact_id, status, project_id),
                          timeout=timeout)

    def list_conflicts(self, *, subject_id: str | None = None,
                       status: ConflictStatus | None = None,
                       cursor: str | None = None, limit: int | None = None,
                       project_id: str | None = None,
        timeout: TimeoutLike = None) -> ConflictPage:
        """``GET /v1/conflicts``: a page of conflict sets."""
        return self._call(*self._routes.list_conflicts(subject_id, status, cursor, limit,
                                                       project_id), timeout=timeout)

    def resolve_conflict(self, conflict_id: UUID | str, keep_fact_id: UUID | str, *,
                         project_id: str | None = None,
        timeout: TimeoutLike = None) -> ResolveResponse:
        """``POST /v1/conflicts/{conflict_id}/resolve``: keep one fact, supersede the rest."""
        return self._call(*self._routes.resolve_conflict(conflict_id, keep_fact_id,
                                                         project_id), timeout=timeout)

    def forget(self, mode: ForgetMode = "disable", *, subject_id: str | None = None,
               fact_id: UUID | str | None = None,
               project_id: str | None = None,
        timeout: TimeoutLike = None) -> ForgetResponse:
        """``POST /v1/forget``: a subject or one fact; ``disable`` (reversible) or
        ``delete`` (erasure, with a receipt)."""
        return self._call(*self._routes.forget(mode, subject_id, fact_id, project_id),
                          timeout=timeout)

    def health(self, *, ready: bool = False, timeout: TimeoutLike = None) -> Health:
        """``GET /v1/health`` (the API answers), or with ``ready=True``
        ``GET /v1/health/ready`` (it reaches its database; 503 raises ``ServerError``)."""
        return self._call(*self._routes.health(ready), timeout=timeout)


class AsyncHakiClient(_Client[httpx.AsyncClient]):
    """Asynchronous client (asyncio or trio, through httpx and anyio); the same settings,
    methods and behaviour as :class:`HakiClient`."""

    _http_class = httpx.AsyncClient

    async def aclose(self) -> None:
        if self._owns_http:
            await self._http.aclose()

    async def __aenter__(self) -> "AsyncHakiClient":
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def _call(self, op: Operation, parts: dict[str, Any], timeout: TimeoutLike = None) -> Any:
        request = self._policy.request(self._http, op, timeout=timeout, **parts)
        attempt = 0
        while True:
            outcome = await self._send(request)
            wait = self._policy.wait_after(op, outcome, attempt)
            if wait is None:
                return self._policy.answer(op, outcome, attempt + 1)
            await anyio.sleep(wait)
            attempt += 1

    async def _send(self, request: httpx.Request) -> httpx.Response | httpx.TransportError:
        try:
            return await self._http.send(request)
        except httpx.TransportError as exc:
            return exc

    # ------------------------------------------------------------------ routes

    async def context(
        self, subject_id: str, query: str, *, purpose: str | None = DEFAULT_PURPOSE,
        budget_tokens: int | None = None, render: bool = False, thread_id: str | None = None,
        project_id: str | None = None, timeout: TimeoutLike = None,
    ) -> ContextResponse:
        try:
            return await self._call(*self._routes.context(subject_id, query, purpose,
                                                          budget_tokens, render, thread_id,
                                                          project_id), timeout=timeout)
        except HakiError as error:
            if self._policy.fails_open(error):
                return self._policy.fallback(error, render)
            raise

    async def inspect(self, trace_id: UUID | str, *, subject_id: str | None = None,
                      project_id: str | None = None,
        timeout: TimeoutLike = None) -> InspectResponse:
        return await self._call(*self._routes.inspect(trace_id, subject_id, project_id),
                                timeout=timeout)

    async def stats_overview(self, *, subject_id: str | None = None,
                             project_id: str | None = None,
        timeout: TimeoutLike = None) -> StatsOverview:
        return await self._call(*self._routes.stats_overview(subject_id, project_id),
                                timeout=timeout)

    async def stats_series(self, *, subject_id: str | None = None, days: int | None = None,
                           granularity: Literal["hour", "day"] | None = None,
                           project_id: str | None = None,
                           timeout: TimeoutLike = None) -> StatsSeries:
        return await self._call(*self._routes.stats_series(subject_id, days, granularity,
                                                           project_id), timeout=timeout)

    async def list_calls(self, *, project_id: str | None = None, timeout: TimeoutLike = None,
                         **filters: Unpack[CallFilters]) -> CallPage:
        return await self._call(*self._routes.list_calls(filters, project_id), timeout=timeout)

    async def get_call(self, trace_id: UUID | str, *, subject_id: str | None = None,
                       project_id: str | None = None,
                       timeout: TimeoutLike = None) -> CallDetail:
        return await self._call(*self._routes.get_call(trace_id, subject_id, project_id),
                                timeout=timeout)

    async def feedback(self, trace_id: UUID | str, *, subject_id: str,
                       used: Sequence[UUID | str] = (), missing: Sequence[UUID | str] = (),
                       verdict: Verdict | None = None, note: str | None = None,
                       source: Source = "agent", project_id: str | None = None,
                       timeout: TimeoutLike = None) -> CallFeedback:
        return await self._call(*self._routes.feedback(
            trace_id, subject_id, used, missing, verdict, note, source, project_id),
            timeout=timeout)

    async def eval_set(self, *, since: Moment | None = None, until: Moment | None = None,
                       limit: int | None = None, project_id: str | None = None,
                       timeout: TimeoutLike = None) -> EvalSet:
        return await self._call(*self._routes.eval_set(since, until, limit, project_id),
                                timeout=timeout)

    async def list_events(self, subject_id: str, *, thread_id: str | None = None,
                          cursor: str | None = None, limit: int | None = None,
                          project_id: str | None = None,
                          timeout: TimeoutLike = None) -> EventPage:
        return await self._call(*self._routes.list_events(subject_id, thread_id, cursor,
                                                          limit, project_id), timeout=timeout)

    async def list_subjects(self, *, cursor: str | None = None, limit: int | None = None,
                            project_id: str | None = None,
                            timeout: TimeoutLike = None) -> SubjectPage:
        return await self._call(*self._routes.list_subjects(cursor, limit, project_id),
                                timeout=timeout)

    async def write_events(self, events: Sequence[EventLike], *,
                           project_id: str | None = None,
        timeout: TimeoutLike = None) -> EventsResponse:
        return await self._call(*self._routes.write_events(events, project_id), timeout=timeout)

    async def remember_event(
        self, subject_id: str, text: str | None = None, *, kind: str = "conversation.message",
        payload: Mapping[str, Any] | None = None, occurred_at: datetime | None = None,
        idempotency_key: str | None = None, thread_id: str | None = None,
        project_id: str | None = None, timeout: TimeoutLike = None,
    ) -> EventWritten:
        event = _event(subject_id, kind, text, payload, occurred_at, idempotency_key,
                       thread_id)
        return (await self.write_events([event], project_id=project_id, timeout=timeout)).events[0]

    async def write_messages(self, subject_id: str, messages: Sequence[MessageLike], *,
                             thread_id: str | None = None, project_id: str | None = None,
                             timeout: TimeoutLike = None) -> EventsResponse:
        """See :meth:`HakiClient.write_messages`: give each message a ``message_id`` (or an
        ``id``) so that a retry does not store it twice."""
        return await self._call(*self._routes.write_messages(subject_id, messages, thread_id,
                                                             project_id), timeout=timeout)

    async def write_facts(self, facts: Sequence[FactLike], *,
                          project_id: str | None = None,
        timeout: TimeoutLike = None) -> FactsResponse:
        return await self._call(*self._routes.write_facts(facts, project_id), timeout=timeout)

    async def record_fact(self, subject_id: str, predicate: str, value: Any, *,
                          project_id: str | None = None, timeout: TimeoutLike = None,
                    **fields: Any) -> FactWritten:
        fact = _record(FactIn, {"subject_id": subject_id, "predicate": predicate,
                                "value": value, **fields})
        return (await self.write_facts([fact], project_id=project_id, timeout=timeout)).facts[0]

    async def list_facts(self, subject_id: str, *, status: FactStatus | None = None,
                         predicate: str | None = None, cursor: str | None = None,
                         limit: int | None = None, project_id: str | None = None,
        timeout: TimeoutLike = None) -> FactPage:
        return await self._call(*self._routes.list_facts(subject_id, status, predicate,
                                                         cursor, limit, project_id),
                                timeout=timeout)

    async def set_fact_status(self, fact_id: UUID | str, status: FactStatus, *,
                              project_id: str | None = None,
        timeout: TimeoutLike = None) -> FactStatusResponse:
        return await self._call(*self._routes.set_fact_status(fact_id, status, project_id),
                                timeout=timeout)

    async def list_conflicts(self, *, subject_id: str | None = None,
                             status: ConflictStatus | None = None,
                             cursor: str | None = None,
                             limit: int | None = None,
                             project_id: str | None = None,
        timeout: TimeoutLike = None) -> ConflictPage:
        return await self._call(*self._routes.list_conflicts(subject_id, status, cursor, limit,
                                                             project_id), timeout=timeout)

    async def resolve_conflict(self, conflict_id: UUID | str, keep_fact_id: UUID | str, *,
                               project_id: str | None = None,
        timeout: TimeoutLike = None) -> ResolveResponse:
        return await self._call(*self._routes.resolve_conflict(conflict_id, keep_fact_id,
                                                               project_id), timeout=timeout)

    async def forget(self, mode: ForgetMode = "disable", *, subject_id: str | None = None,
                     fact_id: UUID | str | None = None,
                     project_id: str | None = None,
        timeout: TimeoutLike = None) -> ForgetResponse:
        return await self._call(*self._routes.forget(mode, subject_id, fact_id, project_id),
                                timeout=timeout)

    async def health(self, *, ready: bool = False, timeout: TimeoutLike = None) -> Health:
        return await self._call(*self._routes.health(ready), timeout=timeout)
