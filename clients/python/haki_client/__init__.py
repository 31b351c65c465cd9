"""Python client of the Haki context assembler API.

```python
from haki_client import HakiClient, render

with HakiClient(project_id="acme-support", fail_open=True) as haki:  # HAKI_URL, HAKI_API_KEY
    haki.remember_event("user-marie", user_message)             # capture the conversation
    answer = haki.context("user-marie", user_message, purpose="support_reply", timeout=2.0,
                          budget_tokens=400, render=True)
    prompt = render(answer) + "\\n\\n" + user_message  # the service's <haki_memory> block
```

The models (``haki_client.models``) are generated from the API's OpenAPI document.
"""

__version__ = "0.1.0"

from haki_client.client import (
    DEFAULT_PURPOSE,
    AsyncHakiClient,
    CallFilters,
    ConflictStatus,
    FactStatus,
    ForgetMode,
    HakiClient,
    empty_response,
    render,
)
from haki_client.errors import (
    APIConnectionError,
    APITimeoutError,
    AuthenticationError,
    BadRequestError,
    ConfigurationError,
    ConflictError,
    HakiError,
    NotFoundError,
    PermissionDeniedError,
    RateLimitError,
    ServerError,
    UnexpectedResponseError,
    ValidationError,
)
from haki_client.models import (
    CallDetail,
    CallPage,
    CallSummary,
    ConflictPage,
    ConflictView,
    ContextPacket,
    ContextResponse,
    EventIn,
    EventPage,
    EventsResponse,
    EventView,
    EventWritten,
    FactIn,
    FactPage,
    FactsResponse,
    FactStatusResponse,
    FactView,
    FactWritten,
    ForgetResponse,
    InspectResponse,
    MessageIn,
    PacketEpisode,
    PacketFact,
    ResolveResponse,
    SeriesPoint,
    StatsOverview,
    StatsSeries,
    TraceDecision,
)

__all__ = [
    "DEFAULT_PURPOSE",
    "APIConnectionError",
    "APITimeoutError",
    "AsyncHakiClient",
    "AuthenticationError",
    "BadRequestError",
    "CallDetail",
    "CallFilters",
    "CallPage",
    "CallSummary",
    "ConfigurationError",
    "ConflictError",
    "ConflictPage",
    "ConflictStatus",
    "ConflictView",
    "ContextPacket",
    "ContextResponse",
    "EventIn",
    "EventPage",
    "EventView",
    "EventWritten",
    "EventsResponse",
    "FactIn",
    "FactPage",
    "FactStatus",
    "FactStatusResponse",
    "FactView",
    "FactWritten",
    "FactsResponse",
    "ForgetMode",
    "ForgetResponse",
    "HakiClient",
    "HakiError",
    "InspectResponse",
    "MessageIn",
    "NotFoundError",
    "PacketEpisode",
    "PacketFact",
    "PermissionDeniedError",
    "RateLimitError",
    "ResolveResponse",
    "SeriesPoint",
    "ServerError",
    "StatsOverview",
    "StatsSeries",
    "SubjectPage",
    "SubjectView",
    "TraceDecision",
    "UnexpectedResponseError",
    "ValidationError",
    "__version__",
    "empty_response",
    "render",
]
