"""Query-string parameter types the handlers share (Powertools validates and documents them)."""

from typing import Annotated

from aws_lambda_powertools.event_handler.openapi.params import Query

from haki.models import SCOPE_MAX_CHARS, SCOPE_PATTERN

#: ``project_id`` / ``subject_id`` in a query string: 1–128 characters, no control character.
ScopeQuery = Annotated[
    str, Query(min_length=1, max_length=SCOPE_MAX_CHARS, pattern=SCOPE_PATTERN)]
#: The same, optional (absent means "the whole project").
OptionalScopeQuery = Annotated[
    str | None, Query(min_length=1, max_length=SCOPE_MAX_CHARS, pattern=SCOPE_PATTERN)]
