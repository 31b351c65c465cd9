"""A project's context calls as the console reads them (docs/spec.md §13), one concern per
module: ``models`` (the requests and responses), ``listing`` (``GET /v1/calls``: the calls
of the retention window, searched and filtered, newest first, keyset-paged) and ``detail``
(``GET /v1/calls/{trace_id}``: the trace with the current text of every candidate and the
block as rendered)."""

from haki.calls.detail import call_detail
from haki.calls.listing import list_calls
from haki.calls.models import CallDetail, CallListRequest, CallPage, CallSummary, Ranking

__all__ = ["CallDetail", "CallListRequest", "CallPage", "CallSummary", "Ranking", "call_detail",
           "list_calls"]
