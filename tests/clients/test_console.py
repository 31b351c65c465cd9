"""The trace console of ``haki serve``: its read-only API (dev key only) over real HTTP, then
the page itself in headless Chromium (Debian's package; ``make test`` installs it when it
can): the DOM after the page's script ran, and a screenshot whose colours show the decision
badges and the score bars.

``HAKI_UPDATE_SCREENSHOT=1`` also writes the screenshot to docs/console.png.
"""

import json
import os
import re
import shutil
import subprocess
import urllib.error
import urllib.request
from dataclasses import dataclass
from email.message import Message
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest
from matplotlib import image

from haki_client import HakiClient
from haki_local.demo import DEMO_PROJECT, DEMO_SUBJECT
from tests.clients.hostile import HOSTILE_QUERY, HOSTILE_SUBJECT
from tests.e2e.conftest import Server, run_cli

QUERY = "Which language should we use when writing to Marie about her invoice?"
SCREENSHOT = Path(__file__).resolve().parents[2] / "docs" / "console.png"
WINDOW = (1500, 1900)


@dataclass
class Answer:
    status: int
    headers: Message  # looked up by name in any case
    body: bytes

    def json(self) -> dict:
        return json.loads(self.body)


def get(url: str, key: str | None = None, method: str = "GET") -> Answer:
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    request = urllib.request.Request(url, headers=headers, method=method)
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return Answer(response.status, response.headers, response.read())
    except urllib.error.HTTPError as error:
        return Answer(error.code, error.headers, error.read())


@pytest.fixture(scope="module")
def calls(haki_server: Server) -> dict[str, str]:
    """A call that fills its budget (over_budget exclusions) and one over hostile memory."""
    with HakiClient(haki_server.url, haki_server.key, project_id=DEMO_PROJECT) as haki:
        tight = haki.context(DEMO_SUBJECT, QUERY, purpose="support_reply", budget_tokens=120)
        hostile = haki.context(HOSTILE_SUBJECT, HOSTILE_QUERY, purpose="test", budget_tokens=4000)
    return {"tight": str(tight.trace_id), "hostile": str(hostile.trace_id)}


# --------------------------------------------------------------------- the console's API


def test_the_api_lists_and_explains_calls(haki_server: Server, calls: dict[str, str]):
    base = f"{haki_server.url}/console/api"
    listing = get(f"{base}/calls?limit=2", haki_server.key)
    assert listing.status == 200 and listing.json()["project_id"] == DEMO_PROJECT
    assert listing.headers["Cache-Control"] == "no-store"
    rows = listing.json()["calls"]
    assert len(rows) == 2 and rows[0]["trace_id"] == calls["hostile"]
    assert rows[1]["trace_id"] == calls["tight"] and rows[1]["budget_tokens"] == 120

    detail = get(f"{base}/calls/{calls['tight']}?subject_id={DEMO_SUBJECT}", haki_server.key)
    body = detail.json()
    inspect = get(f"{haki_server.url}/v1/inspect/{calls['tight']}?project_id={DEMO_PROJECT}"
                  f"&subject_id={DEMO_SUBJECT}", haki_server.key).json()
    assert body["trace"] == inspect
    assert body["rendered"].startswith("<haki_memory>")
    assert body["ranking"]["preset"] in ("fused", "seed")
    assert set(body["ranking"]["weights"]) == {"similarity", "text_rank", "recency"}
    ids = {d["fact_id"] or d["event_id"] for d in inspect["decisions"]}
    assert set(body["texts"]) == ids
    assert {d["reason_code"] for d in inspect["decisions"]} >= {"conflict_open", "over_budget"}


def test_the_api_serves_the_dev_key_only(haki_server: Server, clients_data_dir: Path,
                                         calls: dict[str, str]):
    base = f"{haki_server.url}/console/api/calls"
    assert get(base).status == 401
    assert get(base, "hk_" + "A" * 43).status == 403
    printed = run_cli(clients_data_dir, "keys", "create", "--org", "acme", "--project",
                      DEMO_PROJECT, "--label", "not the dev key")
    other = re.search(r"^key:\s+(hk_\S+)$", printed, re.M).group(1)
    # A valid key of the same project still reads the API, never the console.
    stats = f"{haki_server.url}/v1/stats/overview?project_id={DEMO_PROJECT}"
    assert get(stats, other).status == 200
    refused = get(base, other)
    assert refused.status == 403 and refused.json()["error"]["code"] == "forbidden"
    assert get(base, haki_server.key, method="POST").status == 405
    unknown = get(f"{base}/not-a-uuid?subject_id=x", haki_server.key)
    assert unknown.status == 404 and unknown.json()["error"]["code"] == "trace_not_found"
    other_subject = get(f"{base}/{calls['tight']}?subject_id=someone-else", haki_server.key)
    assert other_subject.status == 404


def test_the_page_is_static_and_locked_down(haki_server: Server):
    page = get(f"{haki_server.url}/console/")
    assert page.status == 200 and page.headers["Content-Type"].startswith("text/html")
    policy = page.headers["Content-Security-Policy"]
    assert "script-src 'self'" in policy and "frame-ancestors 'none'" in policy
    assert haki_server.key.encode() not in page.body  # no key, no data in the page itself
    for name, kind in [("console.js", "javascript"), ("console.css", "text/css")]:
        answer = get(f"{haki_server.url}/console/{name}")
        assert answer.status == 200 and kind in answer.headers["Content-Type"]
    assert get(f"{haki_server.url}/console/__init__.py").status == 404
    assert get(f"{haki_server.url}/console/..%2F__init__.py").status == 404
    assert get(f"{haki_server.url}/console").body == page.body  # /console → /console/


# --------------------------------------------------------------------- headless Chromium


def chromium() -> str:
    for name in (os.environ.get("HAKI_CHROMIUM", ""), "chromium", "chromium-browser"):
        if name and (path := shutil.which(name)):
            return path
    # Never a skip: a page test that does not run must not pass for one that did.
    pytest.fail("Chromium is missing: `make test` installs Debian's chromium when run as root; "
                "otherwise `apt-get install chromium` (or set HAKI_CHROMIUM)")


def browse(tmp_path: Path, url: str, *output: str) -> str:
    profile = tmp_path / f"profile-{len(list(tmp_path.iterdir()))}"
    done = subprocess.run(
        [chromium(), "--headless", "--no-sandbox", "--disable-gpu",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--no-first-run", "--disable-quic", f"--user-data-dir={profile}", "--hide-scrollbars",
         f"--window-size={WINDOW[0]},{WINDOW[1]}", "--virtual-time-budget=10000", *output, url],
        capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


class Elements(HTMLParser):
    """Every element of a DOM dump: (tag, attributes, text inside it)."""

    def __init__(self) -> None:
        super().__init__()
        self.open: list[tuple[str, dict[str, str], list[str]]] = []
        self.done: list[tuple[str, dict[str, str], str]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in ("col", "meta", "link", "input", "br"):
            self.done.append((tag, {k: v or "" for k, v in attrs}, ""))
            return
        self.open.append((tag, {k: v or "" for k, v in attrs}, []))

    def handle_endtag(self, tag: str) -> None:
        while self.open:
            name, attrs, text = self.open.pop()
            self.done.append((name, attrs, "".join(text)))
            if self.open:
                self.open[-1][2].append("".join(text))
            if name == tag:
                break

    def handle_data(self, data: str) -> None:
        if self.open:
            self.open[-1][2].append(data)

    def having(self, tag: str, cls: str = "") -> list[tuple[str, dict[str, str], str]]:
        return [e for e in self.done
                if e[0] == tag and (not cls or cls in e[1].get("class", "").split())]


def dom(tmp_path: Path, url: str) -> Elements:
    elements = Elements()
    elements.feed(browse(tmp_path, url, "--dump-dom"))
    return elements


def console_url(server: Server, trace_id: str, subject_id: str) -> str:
    return f"{server.url}/console/#key={server.key}&trace={trace_id}&subject={subject_id}"


def test_the_page_shows_the_call_and_every_decision(haki_server: Server, calls: dict[str, str],
                                                    tmp_path: Path):
    inspect = get(f"{haki_server.url}/v1/inspect/{calls['tight']}?project_id={DEMO_PROJECT}"
                  f"&subject_id={DEMO_SUBJECT}", haki_server.key).json()
    page = dom(tmp_path, console_url(haki_server, calls["tight"], DEMO_SUBJECT))
    body = page.having("body")[0]
    assert body[1].get("data-ready") == "true"
    assert "error" not in next(e for e in page.done if e[1].get("id") == "status")[2]
    calls_rows = [e for e in page.having("tr") if "data-trace-id" in e[1]]
    assert len(calls_rows) >= 2
    selected = next(e for e in calls_rows if "selected" in e[1].get("class", ""))
    assert selected[1]["data-trace-id"] == calls["tight"]

    decisions = [e for e in page.having("tr") if "decision" in e[1].get("class", "").split()]
    assert len(decisions) == len(inspect["decisions"])
    assert [d[1]["data-action"] for d in decisions] == [d["action"] for d in inspect["decisions"]]
    assert sum("blocked" in d[1]["class"] for d in decisions) == sum(
        d["action"] == "blocked" for d in inspect["decisions"]) > 0
    texts = [d[2] for d in decisions]
    assert any("conflict_open" in t for t in texts) and any("over_budget" in t for t in texts)
    assert len([e for e in page.having("span", "seg")]) >= len(inspect["decisions"]) - 4
    budget = [e for e in page.having("tr", "budget-line")]
    assert len(budget) == 1 and "Budget line: 120 tokens" in budget[0][2]
    assert "of 120 tokens used" in page.having("div", "budget-label")[0][2]
    rendered = next(e for e in page.done if e[1].get("id") == "rendered")[2]
    assert rendered.startswith("<haki_memory>\nFacts:\n")  # as text, not markup


def test_hostile_memory_stays_text_in_the_page(haki_server: Server, calls: dict[str, str],
                                               tmp_path: Path):
    html = browse(tmp_path, console_url(haki_server, calls["hostile"], HOSTILE_SUBJECT),
                  "--dump-dom")
    assert 'data-ready="true"' in html
    assert "&lt;b&gt;bold&lt;/b&gt;" in html and "<b>bold</b>" not in html
    assert "<haki_memory>" not in html.replace("&lt;haki_memory&gt;", "")


def test_a_screenshot_shows_badges_and_score_bars(haki_server: Server, calls: dict[str, str],
                                                  tmp_path: Path):
    shot = tmp_path / "console.png"
    browse(tmp_path, console_url(haki_server, calls["tight"], DEMO_SUBJECT),
           f"--screenshot={shot}")
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 50_000
    pixels = (image.imread(shot)[:, :, :3] * 255).round().astype(int)
    assert pixels.shape[:2] == (WINDOW[1], WINDOW[0])

    def count(hex_colour: str) -> int:
        rgb = np.array([int(hex_colour[i:i + 2], 16) for i in (1, 3, 5)])
        return int((np.abs(pixels - rgb).sum(axis=2) <= 6).sum())

    # console.css: included / excluded / blocked badges, similarity / recency bar segments.
    for colour in ("#1f9d55", "#d98e04", "#d64545", "#3867d6", "#a55eea"):
        assert count(colour) > 200, colour
    if os.environ.get("HAKI_UPDATE_SCREENSHOT"):
        shutil.copyfile(shot, SCREENSHOT)
