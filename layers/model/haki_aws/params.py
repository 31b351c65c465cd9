"""Query-string parameter types the handlers share (Powertools validates and documents them)."""

from typing import Annotated

from aws_lambda_powertools.event_handler.openapi.params import Query

from haki.memory.api import MAX_CURSOR_CHARS, MAX_PAGE, Predicate, ScopeId

#: ``project_id`` / ``subject_id`` in a query string: 1–128 characters, no control character,
#: in NFC (``haki.identities``).
ScopeQuery = Annotated[ScopeId, Query()]
#: The same, optional (absent means "the whole project").
OptionalScopeQuery = Annotated[ScopeId | None, Query()]
#: A conversation thread to filter on (the rules of a scope id).
ThreadQuery = Annotated[
    ScopeId | None, Query(description="only the events of this conversation thread")]

#: A listing's page size: 1–200, 50 when absent (``haki.memory.api``).
PageLimitQuery = Annotated[int, Query(ge=1, le=MAX_PAGE)]
#: The ``next_cursor`` of the previous page.
CursorQuery = Annotated[str | None, Query(min_length=1, max_length=MAX_CURSOR_CHARS)]
#: A fact predicate to filter on.
PredicateQuery = Annotated[Predicate | None, Query()]
