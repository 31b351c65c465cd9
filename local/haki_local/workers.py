"""Worker processes for the local API: one listening socket, several interpreters serving it.

A Lambda container serves one request at a time, and the handlers keep their database
connection and embedder in module globals, so one process can only serve one request at a
time. To serve requests in parallel — up to the machine's cores — ``haki serve`` listens once
and starts ``workers`` fresh interpreters (``python -m haki_local.workers FD``) that inherit
the socket and accept from it, each with its own handlers, connection and model (fresh
processes rather than forks: onnxruntime's threads and open connections do not survive a
fork). The kernel hands each new connection to an idle worker.
"""

import os
import signal
import socket
import subprocess
import sys
from types import FrameType

from haki.settings import get_settings
from haki_local.console import Console
from haki_local.server import LocalGateway, load_handlers, serve_on

#: Connections the kernel queues while every worker is busy.
BACKLOG = 128


def default_workers() -> int:
    """One worker per core, at most four (each holds its own ~250 MiB embedder)."""
    return max(1, min(os.cpu_count() or 1, 4))


def listen(host: str, port: int) -> socket.socket:
    """The listening socket every worker accepts from (port 0 picks a free one)."""
    sock = socket.create_server((host, port), backlog=BACKLOG)
    sock.set_inheritable(True)
    # Every idle worker is woken when a connection arrives and one wins it: the others must
    # get "nothing to accept" back, not block in accept() (the accepted sockets are blocking).
    sock.setblocking(False)
    return sock


def spawn(sock: socket.socket, count: int) -> list[subprocess.Popen[bytes]]:
    """Start ``count`` workers on ``sock``; they inherit the environment and the console."""
    fd = sock.fileno()
    return [
        subprocess.Popen([sys.executable, "-m", "haki_local.workers", str(fd)], pass_fds=(fd,))
        for _ in range(count)
    ]


def stop(workers: list[subprocess.Popen[bytes]], timeout_s: float = 20.0) -> None:
    """Ask every worker to finish its request and exit; kill the ones that do not."""
    for worker in workers:
        if worker.poll() is None:
            worker.send_signal(signal.SIGTERM)
    for worker in workers:
        try:
            worker.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            worker.kill()
            worker.wait()


def _run(fd: int) -> int:
    sock = socket.socket(fileno=fd)
    console = Console(get_settings())
    server = serve_on(sock, LocalGateway(load_handlers()), mounts=(console.handle,))

    def finish(signum: int, frame: FrameType | None) -> None:
        raise KeyboardInterrupt

    # Ctrl-C reaches the whole process group: the parent decides, workers just finish.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, finish)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
        console.close()
    return 0


if __name__ == "__main__":
    sys.exit(_run(int(sys.argv[1])))
