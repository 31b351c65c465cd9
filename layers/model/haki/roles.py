"""The database's names that the schema, the connections and the deployment share.

Standard library only: the CDK app imports it to name proxy users and the database without
pulling in the database driver.
"""

from enum import StrEnum

#: The service's database (created by the deployment, or by the embedded server locally).
DATABASE_NAME = "haki"


class Role(StrEnum):
    """Database roles (created by migrations/0001_schema.sql). Each process uses the least it
    needs."""

    #: Migrations and the admin CLI (keys); member of ``haki_admin``.
    OWNER = "owner"
    #: The API functions: row-level security confines it to one project per transaction.
    APP = "haki_app"
    #: The scheduled aggregation: reads every project's calls, writes rollups.
    STATS = "haki_stats"
