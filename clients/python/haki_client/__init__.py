"""Python client of the Haki context assembler API.

```python
from haki_client import HakiClient, render

with HakiClient(project_id="acme-support", fail_open=True) as haki:  # HAKI_URL, HAKI_API_KEY
    answer = haki.context("user-marie", "Which language should we write to Marie in?",
                          purpose="support_reply", budget_tokens=400)
    prompt = render(answer.packet) + "\\n\\n" + user_message
```
"""

__version__ = "0.1.0"

from haki_client.client import AsyncHakiClient, HakiClient, empty_response
from haki_client.errors import HakiError
from haki_client.models import (
    ContextPacket,
    ContextResponse,
    InspectResponse,
    PacketEpisode,
    PacketFact,
    StatsOverview,
    TraceDecision,
)
from haki_client.render import render

__all__ = [
    "AsyncHakiClient",
    "ContextPacket",
    "ContextResponse",
    "HakiClient",
    "HakiError",
    "InspectResponse",
    "PacketEpisode",
    "PacketFact",
    "StatsOverview",
    "TraceDecision",
    "__version__",
    "empty_response",
    "render",
]
