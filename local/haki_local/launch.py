"""Start ``haki serve`` as a child process and read its URL and key from the banner — for the
end-to-end tests, the load test and the SDK tests, which all talk to a real local API."""

import os
import queue
import re
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

STARTUP_TIMEOUT_S = 180
_URL = re.compile(r"^Haki local API: (http://\S+)$")
_KEY = re.compile(r"^API key \(([^)]+)\): (hk_\S+)$")


@dataclass
class LocalApi:
    process: subprocess.Popen[str]
    url: str = ""
    key: str = ""
    #: Everything the server printed so far (stdout and stderr).
    lines: list[str] = field(default_factory=list)


def local_env(data_dir: Path) -> dict[str, str]:
    """This environment without any ``HAKI_*`` variable, the data kept in ``data_dir``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("HAKI_")}
    return {**env, "HAKI_DATA_DIR": str(data_dir), "PYTHONUNBUFFERED": "1"}


def start(data_dir: Path, *serve_args: str, timeout_s: float = STARTUP_TIMEOUT_S,
          settings: dict[str, str] | None = None) -> LocalApi:
    """``haki serve --port 0 [serve_args]`` over ``data_dir``, once its banner is printed;
    ``settings``: ``HAKI_*`` variables to run it with."""
    process = subprocess.Popen(
        [sys.executable, "-m", "haki_local.cli", "serve", "--port", "0", *serve_args],
        env={**local_env(data_dir), **(settings or {})}, stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, text=True)
    api = LocalApi(process)
    lines: queue.Queue[str] = queue.Queue()

    def pump() -> None:
        """Read the server's output until it exits, so it never blocks on a full pipe."""
        assert process.stdout is not None
        for line in process.stdout:
            api.lines.append(line.rstrip("\n"))
            lines.put(line.rstrip("\n"))

    threading.Thread(target=pump, daemon=True).start()
    deadline = time.monotonic() + timeout_s
    while not (api.url and api.key):
        try:
            line = lines.get(timeout=max(0.1, deadline - time.monotonic()))
        except queue.Empty:
            process.kill()
            raise RuntimeError("haki serve did not start:\n" + "\n".join(api.lines)) from None
        if match := _URL.match(line):
            api.url = match.group(1)
        if match := _KEY.match(line):
            api.key = match.group(2)
    return api


def stop(api: LocalApi, timeout_s: float = 60.0) -> int:
    """Ctrl-C, as a user would; the exit code of a clean stop is 0."""
    api.process.send_signal(signal.SIGINT)
    return api.process.wait(timeout=timeout_s)
