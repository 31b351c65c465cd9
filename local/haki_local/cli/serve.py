"""``haki serve``: the local API in one command.

Starts the embedded PostgreSQL (data kept under ``.haki/``), applies migrations, loads the
demo data set once, creates or reuses a dev API key for the demo project (the clear key is
kept in ``.haki/dev-key``, mode 0600, since the database holds only its hash), then serves the
real Lambda handlers on 127.0.0.1 (:mod:`haki_local.server`: uvicorn worker processes, one per
core up to 4 unless ``--workers`` says otherwise; ``--port 0`` picks a free port) and, once a
first context call has been served, prints the URL, the key and a ready ``curl`` for each
endpoint. Ctrl-C (or SIGTERM) stops the server and the database.
"""

import argparse
import errno
import ipaddress
import json
import os
import shlex
import signal
import socket
import sys
import threading
import urllib.error
import urllib.request
from pathlib import Path
from typing import TYPE_CHECKING

from haki.db import Database, Role
from haki.db.migrate import apply_migrations
from haki.embedding import get_embedder
from haki.errors import HakiError, Unauthorized, ValidationFailed
from haki.keys import authenticate
from haki.settings import Settings, get_settings
from haki_local.admin import create_key
from haki_local.demo import DEMO_ORG, DEMO_PROJECT, DEMO_QUERY, DEMO_SUBJECT, load_demo
from haki_local.embedded import local_database_url

if TYPE_CHECKING:
    from uvicorn.supervisors import Multiprocess

DEFAULT_PORT = 8787
DEV_KEY_FILE = "dev-key"


class PortUnavailable(HakiError):
    """The address ``haki serve`` was asked to listen on cannot be bound."""

    code = "port_unavailable"
    status = 500
    api = False


def bind(host: str, port: int) -> socket.socket:
    """The listening socket, bound before anything else starts: a busy port fails at once."""
    try:
        return socket.create_server((host, port))
    except OSError as error:
        reason = ("is already in use (another haki serve?); stop it or pick another with "
                  "--port" if error.errno == errno.EADDRINUSE else f"cannot be bound: "
                  f"{error.strerror or error}")
        raise PortUnavailable(f"{host}:{port} {reason}") from None


def register(subparsers: argparse._SubParsersAction) -> None:
    serve = subparsers.add_parser("serve", help="run the local API over the embedded database")
    serve.add_argument("--host", default="127.0.0.1",
                       help="interface (default 127.0.0.1; anything else is refused unless "
                            "--allow-remote is given: the dev key is printed on the console)")
    serve.add_argument("--allow-remote", action="store_true",
                       help="let --host name an interface other than loopback")
    serve.add_argument("--port", type=int, default=DEFAULT_PORT, help="0 picks a free port")
    serve.add_argument("--no-demo", action="store_true", help="do not load the demo data set")
    serve.add_argument("--workers", type=int, default=None,
                       help="processes serving requests in parallel (default: one per core, "
                            "at most 4)")
    serve.set_defaults(run=_serve)


def dev_key(settings: Settings, owner: Database, app: Database) -> str:
    """The stored dev key if it is still live for the demo project, else a new one."""
    path = settings.data_dir / DEV_KEY_FILE
    if path.is_file():
        key = path.read_text(encoding="utf-8").strip()
        try:
            if authenticate(app, key).project_id == DEMO_PROJECT:
                return key
        except Unauthorized:
            pass
    new = create_key(owner, org_id=DEMO_ORG, project_id=DEMO_PROJECT, label="local dev key",
                     create_project=True)
    _write_private(path, new.key)
    return new.key


def _write_private(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write(text + "\n")
    path.chmod(0o600)


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def default_workers() -> int:
    """One worker per core, at most four (each holds its own ~250 MiB embedder)."""
    return max(1, min(os.cpu_count() or 1, 4))


def _serve(args: argparse.Namespace) -> int:
    if not is_loopback(args.host):
        if not args.allow_remote:
            raise ValidationFailed(
                f"--host {args.host} is not a loopback address: the local API serves the demo "
                "data with a printed dev key; add --allow-remote to expose it anyway")
        print(f"WARNING: the local API listens on {args.host}, reachable from other machines, "
              "with the dev key printed below. Use it only on a network you trust.",
              file=sys.stderr, flush=True)
    args.workers = args.workers or default_workers()
    if args.workers < 1:
        raise ValidationFailed("--workers must be at least 1")
    if not 0 <= args.port <= 65535:
        raise ValidationFailed(f"--port {args.port} is not a port (0 to 65535; 0 picks one)")
    listening = bind(args.host, args.port)
    # SIGTERM while starting ends like Ctrl-C (a normal exit that releases the database); the
    # supervisor takes both signals over once it runs.
    signal.signal(signal.SIGTERM, _interrupt)
    settings = get_settings()
    owner = Database(local_database_url(settings, Role.OWNER))
    app = Database(local_database_url(settings, Role.APP))
    applied = apply_migrations(local_database_url(settings, Role.OWNER))
    print("database ready: " + (f"applied {', '.join(applied)}" if applied
                                else "schema up to date"), flush=True)
    if not args.no_demo:
        summary = load_demo(owner, get_embedder(settings))
        print("demo data: " + (f"loaded {summary}" if summary else "already loaded"), flush=True)
    key = dev_key(settings, owner, app)

    owner.close()
    app.close()
    # The workers (processes started from here) run the handlers as the runtime role,
    # configured as a function is: by their environment.
    os.environ["HAKI_DATABASE_URL"] = local_database_url(settings, Role.APP)

    # Imported here: the server imports uvicorn and the console, which the rest of the CLI
    # does not need (the workers import the Lambda handlers themselves).
    from uvicorn.config import STARTUP_FAILURE

    from haki_local.server import supervisor

    with listening as sock:
        url = f"http://{args.host}:{sock.getsockname()[1]}"
        workers = supervisor(sock, args.workers)  # from here on, Ctrl-C and SIGTERM stop it
        failed = threading.Event()
        threading.Thread(target=_announce, args=(url, key, workers, failed), daemon=True).start()
        workers.run()
    if failed.is_set() or any(p.exitcode == STARTUP_FAILURE for p in workers.processes):
        print("the local API did not start; stopped", file=sys.stderr)
        return 1
    print("\nstopped", file=sys.stderr)
    return 0


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def _announce(url: str, key: str, workers: "Multiprocess", failed: threading.Event) -> None:
    """Once a worker answers one context call (it loads the model), print the banner with the
    call's trace id for its inspect example; if none answers, stop the workers."""
    request = urllib.request.Request(
        f"{url}/v1/context", data=json.dumps(_demo_request()).encode(), method="POST",
        headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=120) as response:
            trace_id = str(json.loads(response.read()).get("trace_id", "<trace_id>"))
    except urllib.error.HTTPError as error:
        trace_id = f"<trace_id: the first call answered {error.code}>"
    except OSError as error:
        print(f"the local API did not answer: {error}", file=sys.stderr, flush=True)
        failed.set()
        workers.should_exit.set()
        return
    print(_banner(url, key, trace_id, workers.processes_num), flush=True)


def _demo_request() -> dict[str, object]:
    return {
        "project_id": DEMO_PROJECT,
        "subject_id": DEMO_SUBJECT,
        "query": DEMO_QUERY,
        "purpose": "support_reply",
        "budget_tokens": 400,
    }


#: The banner's write example: an event about the demo subject, then a context call that
#: serves it as an episode (read-your-writes). Its idempotency key makes a second run a replay.
DEMO_EVENT = {
    "subject_id": DEMO_SUBJECT, "kind": "conversation.message",
    "idempotency_key": "demo-banner-absence",
    "payload": {"text": "Je serai absente du 3 au 21 mars : pour la facture, écrivez à ma "
                        "collègue Julie Martin, julie.martin@example.com."},
}
DEMO_EVENT_QUERY = "Qui contacter au sujet de la facture pendant que Marie est absente ?"
#: Same value as the demo's active fact: the answer says ``reinforced``, no new row.
DEMO_FACT = {"subject_id": DEMO_SUBJECT, "predicate": "preferred_language", "value": "fr"}


def examples(url: str, key: str, trace_id: str) -> list[tuple[str, str]]:
    """The banner's ``(comment, curl command)`` pairs, in the order to run them."""
    auth = shlex.quote(f"Authorization: Bearer {key}")
    json_type = "-H 'Content-Type: application/json'"
    scope = f"project_id={DEMO_PROJECT}&subject_id={DEMO_SUBJECT}"

    def post(path: str, body: dict[str, object]) -> str:
        data = shlex.quote(json.dumps(body, ensure_ascii=False))
        return f"curl -s {url}{path} -H {auth} {json_type} -d {data}"

    seen = {**_demo_request(), "query": DEMO_EVENT_QUERY}
    return [
        ("assemble a context packet", post("/v1/context", _demo_request())),
        ("inspect a call (this one ran at start)",
         f"curl -s '{url}/v1/inspect/{trace_id}?{scope}' -H {auth}"),
        ("usage overview", f"curl -s '{url}/v1/stats/overview?project_id={DEMO_PROJECT}' "
                           f"-H {auth}"),
        ("write an event (201; run it again: the same id, deduplicated)",
         post("/v1/events", {"project_id": DEMO_PROJECT, "events": [DEMO_EVENT]})),
        ("... and the next context call serves it", post("/v1/context", seen)),
        ("write a fact (her active value: reinforced, no new row)",
         post("/v1/facts", {"project_id": DEMO_PROJECT, "facts": [DEMO_FACT]})),
        ("her active facts, 5 a page", f"curl -s '{url}/v1/facts?{scope}&limit=5' -H {auth}"),
        ("her open conflict sets", f"curl -s '{url}/v1/conflicts?{scope}' -H {auth}"),
    ]


def _banner(url: str, key: str, trace_id: str, workers: int) -> str:
    lines = ["", f"Haki local API: {url}", f"API key ({DEMO_PROJECT}): {key}",
             f"workers: {workers} (requests served in parallel)", ""]
    for comment, command in examples(url, key, trace_id):
        lines += [f"# {comment}", command]
    lines += ["", "# the console: paste the API key above into its form (a link never carries it)",
              f"Console: {url}/console/#project={DEMO_PROJECT}"]
    return "\n".join([*lines, "", "Ctrl-C stops the server."])
