"""The API's REQUEST authorizer (``haki_aws.authorizer``): the tenant's ``hk_`` key alone
authenticates a call and names the usage key it is metered under.

One database handle per warm container, opened on the first call.
"""

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from haki.db import Role
from haki_aws.authorizer import authorize
from haki_aws.database import runtime_database
from haki_aws.observability import api_entry

db = runtime_database(Role.APP)


@api_entry
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return authorize(db, event)
