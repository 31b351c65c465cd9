"""Custom resource handler: apply the SQL migrations as the schema owner on every deploy; and
the scheduled owner task that keeps the big subjects' own indexes (``{"task":
"scope_indexes", "SecretArn": ...}``, ``haki.db.scope_indexes``).

The CDK provider framework (``infra/haki_infra/migrations.py``) invokes it and answers
CloudFormation: returning reports SUCCESS, raising reports FAILED, which fails the deploy and
rolls it back. The runner is idempotent (applied files are recorded, a lock serialises
runners), so Create and Update both just apply what is pending; Delete keeps the schema
(the data outlives a stack update that drops this resource).

The owner logs in directly to the database with the password from its Secrets Manager secret
(the proxy accepts IAM logins of the runtime roles only), over TLS verified against the RDS CA
bundle the layer ships (``sslmode=verify-full``; ``haki_aws.trust``): a layer built without it
fails the deploy rather than connect unverified.
"""

import json
import logging
import time
from collections.abc import Mapping
from typing import Any

import boto3
from psycopg.conninfo import make_conninfo

from haki.db.migrate import apply_migrations
from haki.db.scope_indexes import ScopeIndexPolicy, reconcile_scope_indexes
from haki.settings import get_settings
from haki_aws.trust import rds_ca_bundle

log = logging.getLogger()
log.setLevel(logging.INFO)

#: One physical resource for the life of the stack: an Update never replaces it.
PHYSICAL_ID = "haki-migrations"

#: The scope-index task starts no build in the last part of its time (a build under way runs
#: on; one cut off leaves an invalid index, which the next run drops and builds again).
BUILD_MARGIN_S = 180.0


def read_secret(secret_arn: str) -> dict[str, Any]:
    """The JSON of the owner secret (``host``, ``port``, ``dbname``, ``username``, ...)."""
    client = boto3.client("secretsmanager")
    response = client.get_secret_value(SecretId=secret_arn)
    secret: dict[str, Any] = json.loads(response["SecretString"])
    return secret


def owner_conninfo(secret: Mapping[str, Any]) -> str:
    """A libpq connection string from an RDS-attached secret. A host that is a folder is a
    Unix socket (a database on the same machine, as in the tests): TLS does not apply."""
    host = str(secret["host"])
    tls = {} if host.startswith("/") else {
        "sslmode": "verify-full", "sslrootcert": str(rds_ca_bundle())}
    return make_conninfo(
        host=host,
        port=int(secret.get("port", 5432)),
        dbname=secret["dbname"],
        user=secret["username"],
        password=secret["password"],
        connect_timeout=10,
        application_name="haki-migrate",
        **tls,
    )


def scope_indexes(event: Mapping[str, Any], context: object) -> dict[str, Any]:
    """The scheduled task: build and drop the scope indexes the settings' policy asks for."""
    remaining_ms = getattr(context, "get_remaining_time_in_millis", None)
    deadline = (time.monotonic() + remaining_ms() / 1000.0 - BUILD_MARGIN_S
                if remaining_ms is not None else None)
    secret = read_secret(event["SecretArn"])
    run = reconcile_scope_indexes(owner_conninfo(secret),
                                 ScopeIndexPolicy.from_settings(get_settings()),
                                 deadline=deadline)
    return {"ran": run.ran, "built": len(run.created), "dropped": len(run.dropped),
            "kept": len(run.kept), "deferred": len(run.deferred), "failed": len(run.failed)}


def handler(event: Mapping[str, Any], context: object) -> dict[str, Any]:
    if event.get("task") == "scope_indexes":
        return scope_indexes(event, context)
    request = event["RequestType"]
    if request == "Delete":
        return {"PhysicalResourceId": event["PhysicalResourceId"]}
    if request not in ("Create", "Update"):
        raise ValueError(f"unknown custom resource request type: {request!r}")
    secret = read_secret(event["ResourceProperties"]["SecretArn"])
    applied = apply_migrations(owner_conninfo(secret))
    log.info("migrations applied: %s", applied or "none pending")
    return {"PhysicalResourceId": PHYSICAL_ID, "Data": {"AppliedCount": len(applied)}}
