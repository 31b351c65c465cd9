"""``haki keys`` and ``haki projects``: API keys and the projects they belong to (as the owner,
a ``haki_admin`` member). A project belongs to one org; a key is made only for a project of
its own org."""

import argparse
from typing import TYPE_CHECKING
from uuid import UUID

from haki.db import Database, Role
from haki.keys import usage_key
from haki.settings import get_settings
from haki_local.admin import create_key, create_project, list_keys, list_projects, revoke_key
from haki_local.embedded import local_database_url

if TYPE_CHECKING:
    from haki_local.usage_plan import Registration


def register(subparsers: argparse._SubParsersAction) -> None:
    keys = subparsers.add_parser("keys", help="manage API keys")
    actions = keys.add_subparsers(dest="keys_command", required=True)

    create = actions.add_parser("create", help="create a key (printed once, never stored)")
    create.add_argument("--org", required=True, help="organisation id")
    create.add_argument("--project", required=True, help="the only project the key may use")
    create.add_argument("--label", default=None, help="free text shown in listings")
    create.add_argument("--create-project", action="store_true",
                        help="create the project for --org when it does not exist yet")
    create.add_argument("--usage-plan-id", default=None, metavar="PLAN",
                        help="register the project's usage key in this API Gateway usage plan "
                             "(the deployed stack's UsagePlanId output; AWS credentials of the "
                             "environment); idempotent, and no key is made when it fails")
    create.set_defaults(run=_create)

    listing = actions.add_parser("list", help="list keys (masked)")
    listing.add_argument("--project", default=None, help="only this project's keys")
    listing.set_defaults(run=_list)

    revoke = actions.add_parser("revoke", help="revoke a key (refused from the next call on)")
    revoke.add_argument("id", type=UUID, help="key id, from `haki keys list`")
    revoke.set_defaults(run=_revoke)

    projects = subparsers.add_parser("projects", help="manage projects (one org each)")
    project_actions = projects.add_subparsers(dest="projects_command", required=True)
    made = project_actions.add_parser("create", help="create a project owned by an org")
    made.add_argument("--org", required=True, help="organisation id")
    made.add_argument("--project", required=True, help="project id")
    made.set_defaults(run=_create_project)
    project_actions.add_parser("list", help="list projects and their org").set_defaults(
        run=_list_projects)


def _owner() -> Database:
    return Database(local_database_url(get_settings(), Role.OWNER))


def _create(args: argparse.Namespace) -> int:
    registered: list[Registration] = []

    def register_usage(project_id: str) -> None:
        # boto3 is imported only by the command that talks to AWS.
        from haki_local.usage_plan import register_usage_key
        registered.append(register_usage_key(args.usage_plan_id, project_id))

    new = create_key(_owner(), org_id=args.org, project_id=args.project, label=args.label,
                     create_project=args.create_project,
                     before_insert=register_usage if args.usage_plan_id else None)
    print(f"id:      {new.info.id}")
    print(f"project: {new.info.project_id} (org {new.info.org_id})")
    print(f"key:     {new.key}")
    if registered:
        print(f"usage key: {usage_key(new.info.project_id)} {_registration(registered[0])}")
    else:
        print(f"usage key (deployed API's usage plan, once per project): "
              f"{usage_key(new.info.project_id)}")
    print("Store the key now: it is shown once and only its hash is kept.")
    return 0


def _registration(done: "Registration") -> str:
    key = f"API key {done.api_key_id} ({'created' if done.created else 'existing'})"
    where = "added to" if done.added else "already in"
    line = f"({key}, {where} usage plan {done.usage_plan_id})"
    if not done.enabled:
        line += " -- the API key is disabled in API Gateway: calls are refused until enabled"
    return line


def _list(args: argparse.Namespace) -> int:
    keys = list_keys(_owner(), project_id=args.project)
    if not keys:
        print("no keys")
        return 0
    print(f"{'id':36}  {'key':13}  {'org':16}  {'project':20}  {'created':16}  status  label")
    for key in keys:
        status = "revoked" if key.revoked_at else "active"
        print(
            f"{key.id!s:36}  {key.masked:13}  {key.org_id:16}  {key.project_id:20}  "
            f"{key.created_at:%Y-%m-%d %H:%M}  {status:7} {key.label or ''}"
        )
    return 0


def _revoke(args: argparse.Namespace) -> int:
    info = revoke_key(_owner(), args.id)
    if info is None:
        print(f"no key with id {args.id}")
        return 1
    print(f"revoked {info.masked} ({info.project_id}) at {info.revoked_at:%Y-%m-%d %H:%M:%S %Z}")
    return 0


def _create_project(args: argparse.Namespace) -> int:
    project = create_project(_owner(), org_id=args.org, project_id=args.project)
    print(f"project: {project.project_id} (org {project.org_id}, "
          f"created {project.created_at:%Y-%m-%d %H:%M})")
    return 0


def _list_projects(args: argparse.Namespace) -> int:
    projects = list_projects(_owner())
    if not projects:
        print("no projects")
        return 0
    print(f"{'project':32}  {'org':24}  created")
    for project in projects:
        print(f"{project.project_id:32}  {project.org_id:24}  {project.created_at:%Y-%m-%d %H:%M}")
    return 0
