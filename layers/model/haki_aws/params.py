"""Query-string parameter types the handlers share (Powertools validates and documents them)."""

from typing import Annotated

from aws_lambda_powertools.event_handler.openapi.params import Query

from haki.memory.api import MAX_CURSOR_CHARS, MAX_PAGE, MAX_PREDICATE_CHARS
from haki.models import SCOPE_MAX_CHARS, SCOPE_PATTERN

#: ``project_id`` / ``subject_id`` in a query string: 1–128 characters, no control character.
ScopeQuery = Annotated[
    str, Query(min_length=1, max_length=SCOPE_MAX_CHARS, pattern=SCOPE_PATTERN)]
#: The same, optional (absent means "the whole project").
OptionalScopeQuery = Annotated[
    str | None, Query(min_length=1, max_length=SCOPE_MAX_CHARS, pattern=SCOPE_PATTERN)]
#: A conversation thread to filter on (the rules of a scope id).
ThreadQuery = Annotated[
    str | None, Query(min_length=1, max_length=SCOPE_MAX_CHARS, pattern=SCOPE_PATTERN,
                      description="only the events of this conversation thread")]

#: A listing's page size: 1–200, 50 when absent (``haki.memory.api``).
PageLimitQuery = Annotated[int, Query(ge=1, le=MAX_PAGE)]
#: The ``next_cursor`` of the previous page.
CursorQuery = Annotated[str | None, Query(min_length=1, max_length=MAX_CURSOR_CHARS)]
#: A fact predicate to filter on.
PredicateQuery = Annotated[str | None, Query(min_length=1, max_length=MAX_PREDICATE_CHARS)]
