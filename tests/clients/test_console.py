"""The console against a real ``haki serve``: its static files over HTTP, then the page itself
driven in headless Chromium (Debian's package, launched by Playwright) as a person uses it —
log in with a key, find a call by text, open it, compare it with another, open the subject's
conflict and resolve it, see the change in the next call, draw the charts — and the same page
with a key of another project, which sees none of it and whose every request is refused.

Screenshots of each view are kept in ``build/console-screenshots/`` (``HAKI_UPDATE_SCREENSHOT=1``
also copies the call view to docs/console.png).
"""

import os
import re
import shutil
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from email.message import Message
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, Page, sync_playwright

from haki_client import HakiClient
from haki_local.demo import DEMO_PROJECT
from tests.clients.hostile import HOSTILE_QUERY, HOSTILE_SUBJECT
from tests.e2e.conftest import Server, run_cli

ROOT = Path(__file__).resolve().parents[2]
SHOTS = ROOT / "build" / "console-screenshots"
SUBJECT = "console-marie"
OTHER_SUBJECT = "console-paul"
WIDE = {"width": 1280, "height": 1000}
#: The one format of every moment the console shows.
STAMP = re.compile(r"^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2} UTC$")
NARROW = {"width": 560, "height": 1000}


def http(url: str, key: str | None = None, method: str = "GET") -> tuple[int, Message, bytes]:
    """Status, headers (looked up by name in any case) and body of one request."""
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    request = urllib.request.Request(url, headers=headers, method=method)
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, response.headers, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.headers, error.read()


def chromium() -> str:
    for name in (os.environ.get("HAKI_CHROMIUM", ""), "chromium", "chromium-browser"):
        if name and (path := shutil.which(name)):
            return path
    # Never a skip: a page test that does not run must not pass for one that did.
    pytest.fail("Chromium is missing: `make browser` installs Debian's chromium when run as "
                "root; otherwise `apt-get install chromium` (or set HAKI_CHROMIUM)")


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=chromium(),
                                              args=["--no-sandbox", "--disable-gpu"])
        yield launched
        launched.close()


@pytest.fixture(scope="module")
def memory(haki_server: Server) -> dict[str, Any]:
    """A subject of its own with an open conflict (two values of one predicate) and two calls
    over it; another subject with one call."""
    with HakiClient(haki_server.url, haki_server.key, project_id=DEMO_PROJECT) as haki:
        haki.record_fact(SUBJECT, "preferred_language", "French")
        haki.record_fact(SUBJECT, "city", "Lyon")
        conflict = haki.record_fact(SUBJECT, "preferred_language", "German", confidence=0.95)
        haki.record_fact(SUBJECT, "postal_address", {"street": "2 rue Neuve", "zip": "69001"})
        haki.remember_event(SUBJECT, "Marie asked for her invoice in French.")
        haki.remember_event(SUBJECT, kind="order.placed",
                            payload={"order": 4417, "items": ["atlas", "globe"]})
        language = haki.context(SUBJECT, "Which language for the zebra invoice letter?",
                                purpose="support_reply")
        city = haki.context(SUBJECT, "Where does she live?", purpose="shipping",
                            budget_tokens=10)
        other = haki.context(OTHER_SUBJECT, "Anything about Paul?", purpose="support_reply")
        haki.write_messages(SUBJECT, [  # one batch, one time: read back in its order
            {"role": "user", "content": "Can the invoice go out today?", "message_id": "c-1",
             "occurred_at": "2026-11-20T10:07:00Z"},
            {"role": "assistant", "content": "Yes, it leaves today.", "message_id": "c-2",
             "occurred_at": "2026-11-20T10:07:00Z"}], thread_id="chat-1")
    return {"conflict": str(conflict.conflict_id), "language": str(language.trace_id),
            "city": str(city.trace_id), "other": str(other.trace_id)}


def shoot(page: Page, name: str) -> Path:
    SHOTS.mkdir(parents=True, exist_ok=True)
    path = SHOTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    return path


def renders(page: Page) -> int:
    """How many times the page has drawn a view (``data-renders``, set when one is done)."""
    return int(page.evaluate("document.body.dataset.renders || '0'"))


def settled(page: Page, action: Callable[[], object]) -> None:
    """Do ``action`` and wait for the page to draw the view it leads to. (Polled from here:
    the page's Content-Security-Policy forbids the eval that wait_for_function needs.)"""
    before = renders(page)
    action()
    for _ in range(600):
        if renders(page) > before and page.evaluate("document.body.dataset.ready") == "true":
            return
        page.wait_for_timeout(50)
    pytest.fail(f"the page drew nothing after the action (status: {page.inner_text('#status')})")


def visit(page: Page, url: str) -> None:
    settled(page, lambda: page.goto(url))


def log_in(page: Page, url: str, project: str, key: str) -> None:
    page.goto(f"{url}/console/")
    page.wait_for_selector("#login", state="visible")
    page.fill("#login-project", project)
    page.fill("#key", key)
    settled(page, lambda: page.click("#login button[type=submit]"))


def listed(page: Page) -> list[str]:
    return page.eval_on_selector_all("#calls tbody tr[data-trace-id]",
                                     "rows => rows.map(r => r.dataset.traceId)")


def inspect(server: Server, trace_id: str, subject: str = SUBJECT) -> dict[str, Any]:
    with HakiClient(server.url, server.key, project_id=DEMO_PROJECT) as haki:
        return haki.inspect(trace_id, subject_id=subject).model_dump(mode="json")


# --------------------------------------------------------------------- the static files


def test_the_page_and_its_files_are_static_and_locked_down(haki_server: Server):
    status, headers, page = http(f"{haki_server.url}/console/")
    assert status == 200 and headers["Content-Type"].startswith("text/html")
    policy = headers["Content-Security-Policy"]
    assert "script-src 'self'" in policy and "frame-ancestors 'none'" in policy
    assert "connect-src 'self'" in policy
    assert haki_server.key.encode() not in page  # no key, no data in the page itself
    for name, kind in [("console.js", "javascript"), ("console.css", "text/css"),
                       ("uPlot.iife.min.js", "javascript"), ("uPlot.min.css", "text/css")]:
        status, headers, _ = http(f"{haki_server.url}/console/{name}")
        assert status == 200 and kind in headers["Content-Type"], name
    assert http(f"{haki_server.url}/console/app.py")[0] == 404
    assert http(f"{haki_server.url}/console/..%2Fapp.py")[0] == 404
    assert http(f"{haki_server.url}/console/", method="POST")[0] == 405
    assert http(f"{haki_server.url}/console")[2] == page  # /console → /console/
    assert b'rel="icon"' in page and b'href="favicon.svg"' in page
    status, headers, icon = http(f"{haki_server.url}/console/favicon.svg")
    assert status == 200 and headers["Content-Type"].startswith("image/svg+xml")
    assert icon.startswith(b"<svg")


# --------------------------------------------------------------------- the page, as used


def test_a_tenant_finds_compares_and_resolves_in_the_page(
    haki_server: Server, browser: Browser, memory: dict[str, Any]
):
    page = browser.new_page(viewport=WIDE)
    log_in(page, haki_server.url, DEMO_PROJECT, haki_server.key)
    assert page.evaluate("sessionStorage.getItem('haki.console.key')") == haki_server.key
    assert haki_server.key not in page.url
    assert {memory["language"], memory["city"], memory["other"]} <= set(listed(page))
    # The list shows the whole query (an ellipsis past the cell, the full text as its title)
    # and the tokens uncut.
    row = page.locator(f"tr[data-trace-id='{memory['language']}']")
    query = "Which language for the zebra invoice letter?"
    assert row.locator(".query").get_attribute("title") == query
    assert row.locator(".query").inner_text() == query
    assert row.locator(".query").evaluate("e => e.clientWidth") >= 200
    tokens = row.locator("td.tokens")
    assert re.fullmatch(r"\d+/900", tokens.inner_text())
    assert tokens.evaluate("e => e.scrollWidth <= e.clientWidth")
    assert STAMP.match(row.locator("time.when").inner_text())
    warned = row.locator(".flag")  # its open conflict: a flag that leaves the time whole
    assert warned.get_attribute("title") == "open_conflict"
    assert row.locator(".call-line").evaluate("e => e.scrollWidth <= e.clientWidth")

    # Find a call by text.
    page.fill("#q", "ZEBRA invoice")
    settled(page, lambda: page.press("#q", "Enter"))
    assert listed(page) == [memory["language"]]
    assert "q=ZEBRA" in page.url  # the search is in the deep link
    shoot(page, "1-search")

    # Open it: every decision of its trace, in order, with comparable bars.
    settled(page, lambda: page.click(f"tr[data-trace-id='{memory['language']}']"))
    trace = inspect(haki_server, memory["language"])
    actions = page.eval_on_selector_all("#decisions tr.decision",
                                        "rows => rows.map(r => r.dataset.action)")
    assert actions == [d["action"] for d in trace["decisions"]]
    assert "conflict_open" in page.inner_text("#decisions")
    # A structured value reads as `key: value` lines there too.
    assert "zip: 69001" in page.inner_text("#decisions")
    assert '{"' not in page.inner_text("#decisions")
    assert page.inner_text("#rendered").startswith("<haki_memory>")
    assert "the same for every call" in page.inner_text("#legend")
    # The budget line only where a candidate did not fit.
    over = [d for d in trace["decisions"] if d["reason_code"] == "over_budget"]
    assert page.locator("#decisions tr.budget-line").count() == (1 if over else 0)
    # Nothing is cut at 1,280 px: the page is no wider than the window, and the decision
    # table, every column, fits its panel without scrolling.
    assert page.evaluate("document.documentElement.scrollWidth") <= WIDE["width"]
    assert page.evaluate("(s => s.scrollWidth <= s.clientWidth)"
                         "(document.querySelector('#detail .scroll'))")
    shot = shoot(page, "2-call")
    if os.environ.get("HAKI_UPDATE_SCREENSHOT"):
        shutil.copyfile(shot, ROOT / "docs" / "console.png")

    # Compare it with the other call of the subject (cleared search, then ⇆ on its row).
    page.fill("#q", "")
    settled(page, lambda: page.press("#q", "Enter"))
    settled(page, lambda: page.click(f"tr[data-trace-id='{memory['city']}'] button.cmp"))
    assert "view=compare" in page.url and not page.is_hidden("#compare")
    other = inspect(haki_server, memory["city"])
    served = [{(d["fact_id"] or d["event_id"]): d["action"] == "included"
               for d in t["decisions"]} for t in (trace, other)]
    shown = dict(page.eval_on_selector_all(
        "#changes tr.change", "rows => rows.map(r => [r.dataset.id, r.dataset.change])"))
    assert set(shown) == set(served[0]) | set(served[1])
    expected = {(False, True): {"entered"}, (True, False): {"left"},
                (True, True): {"moved", "kept"}, (False, False): {"out"}}
    for candidate, change in shown.items():
        before, after = (s.get(candidate, False) for s in served)
        assert change in expected[(before, after)], candidate
    assert "entered" in shown.values() or "left" in shown.values()
    assert page.locator("#compare-heads time.when").count() == 2
    shoot(page, "3-compare")

    # The subject's memory: the open conflict, and why its facts were not served.
    settled(page, lambda: page.keyboard.press("Escape"))
    settled(page, lambda: page.click("#to-memory"))
    conflict = page.locator(f".conflict[data-conflict-id='{memory['conflict']}']")
    assert conflict.count() == 1
    facts = {f["fact_id"]: f for f in trace["decisions"] if f["fact_id"]}
    blocked = [i for i, d in facts.items() if d["reason_code"] == "conflict_open"]
    assert blocked
    row = page.locator(f"#fact-groups tr[data-fact-id='{blocked[0]}']")
    row.locator("button.why-not").click()
    assert "blocked in this call: conflict_open" in row.inner_text()
    assert "Marie asked for her invoice" in page.inner_text("#episodes")
    # Newest first; the two messages of one time in the reverse of the order they were said.
    chat = page.locator("#episodes li[data-thread='chat-1']").all_inner_texts()
    assert [text.split(" · ")[-1] for text in chat] == [
        "chat-1 Yes, it leaves today.", "chat-1 Can the invoice go out today?"]
    # Structured values and payloads read as `key: value` lines, not JSON.
    facts_text = page.inner_text("#fact-groups")
    lines = facts_text.replace("\t", "\n").splitlines()
    at = lines.index("postal_address:")  # jsonb orders the keys its own way
    assert sorted(lines[at + 1:at + 3]) == ["street: 2 rue Neuve", "zip: 69001"]
    episodes_text = page.inner_text("#episodes")
    assert "items: atlas, globe" in episodes_text and "order: 4417" in episodes_text
    assert '{"' not in facts_text + episodes_text + page.inner_text("#conflicts")
    # Every moment of the page in the one format.
    stamps = page.locator("time.when").all_inner_texts()
    assert stamps and all(STAMP.match(s) for s in stamps), stamps
    # Each fact of the conflict says when it was recorded, from what, with what confidence.
    members = conflict.locator(".member").all_inner_texts()
    assert len(members) == 2 and all(m.startswith("recorded 20") for m in members)
    assert any("confidence 0.95" in m for m in members)
    assert any("no confidence given" in m for m in members)
    shoot(page, "4-memory")

    # Resolve it: "Keep this one" asks first, and Cancel resolves nothing.
    keep = conflict.locator("button.keep").first.get_attribute("data-fact-id")
    conflict.locator("button.keep").first.click()
    dialog = conflict.locator(".confirm")
    assert dialog.is_visible() and "become" in dialog.inner_text()
    assert "superseded" in dialog.inner_text() and "recorded 20" in dialog.inner_text()
    shoot(page, "4b-keep-confirmation")
    dialog.locator("button.cancel").click()
    assert not dialog.is_visible()
    assert page.locator(f".conflict[data-conflict-id='{memory['conflict']}']").count() == 1
    conflict.locator("button.keep").first.click()
    dialog.locator("button.confirm-keep").click()
    page.wait_for_selector(f".conflict[data-conflict-id='{memory['conflict']}']",
                           state="detached")
    assert "No open conflict" in page.inner_text("#conflicts")

    # The next call serves the kept fact, with no conflict left.
    with HakiClient(haki_server.url, haki_server.key, project_id=DEMO_PROJECT) as haki:
        after = haki.context(SUBJECT, "Which language for the zebra invoice letter?",
                             purpose="support_reply")
    visit(page, f"{haki_server.url}/console/#view=call&q=zebra")
    assert listed(page)[0] == str(after.trace_id)
    page.keyboard.press("j")  # the first row takes the focus
    settled(page, lambda: page.keyboard.press("Enter"))
    assert f"trace={after.trace_id}" in page.url
    decisions = dict(page.eval_on_selector_all(
        "#decisions tr.decision", "rows => rows.map(r => [r.dataset.id, r.dataset.action])"))
    assert decisions[keep] == "included"
    assert "conflict_open" not in page.inner_text("#decisions")
    shoot(page, "5-after-resolve")

    # The project's subjects, with their counts; a click opens one's memory.
    visit(page, f"{haki_server.url}/console/#view=memory")
    subject_row = page.locator(f"#subjects tr[data-subject-id='{SUBJECT}']")
    assert subject_row.count() == 1
    with HakiClient(haki_server.url, haki_server.key) as haki:
        active = len(haki.list_facts(SUBJECT, limit=200).facts)
        events = len(haki.list_events(SUBJECT, limit=200).events)
    cells = subject_row.locator("td").all_inner_texts()
    assert (cells[1], cells[2], cells[3]) == (str(active), str(events), "0")
    assert STAMP.match(cells[4])
    settled(page, lambda: subject_row.click())
    assert f"subject={SUBJECT}" in page.url and page.inner_text("#memory-subject") == SUBJECT
    shoot(page, "5b-subjects")

    # Charts from the rollups and the tail: one per figure, project and subject.
    visit(page, f"{haki_server.url}/console/#view=charts&days=1&subject={SUBJECT}")
    assert page.locator("#chart-grid .chart canvas").count() == 7
    assert page.locator("#chart-grid .u-legend th").count() >= 8  # project + subject lines
    rate = page.locator("#chart-grid .chart[data-chart='injection_rate']")
    assert rate.get_attribute("data-y-range") == "0,1"
    for chart in page.locator("#chart-grid .chart").all():
        markers = chart.locator(".u-legend .u-series .u-marker").evaluate_all(
            "ms => ms.slice(1).map(m => getComputedStyle(m).borderColor)")
        assert len(markers) == len(set(markers)) >= 2, markers  # project ≠ subject colour
    shoot(page, "6-charts")

    # A narrow window: one column, nothing wider than the window but the scrolled tables.
    page.set_viewport_size(NARROW)
    visit(page, f"{haki_server.url}/console/#view=call&trace={after.trace_id}&subject={SUBJECT}")
    columns = page.evaluate("getComputedStyle(document.querySelector('main'))"
                            ".gridTemplateColumns.split(' ').length")
    assert columns == 1
    assert page.evaluate("document.documentElement.scrollWidth") <= NARROW["width"]
    shoot(page, "7-narrow")
    page.close()


def test_hostile_memory_stays_text_in_the_page(haki_server: Server, browser: Browser):
    with HakiClient(haki_server.url, haki_server.key, project_id=DEMO_PROJECT) as haki:
        call = haki.context(HOSTILE_SUBJECT, HOSTILE_QUERY, purpose="test", budget_tokens=4000)
    page = browser.new_page(viewport=WIDE)
    log_in(page, haki_server.url, DEMO_PROJECT, haki_server.key)
    visit(page, f"{haki_server.url}/console/#view=call&trace={call.trace_id}"
                f"&subject={HOSTILE_SUBJECT}")
    html = page.content()
    assert "&lt;b&gt;bold&lt;/b&gt;" in html and "<b>bold</b>" not in html
    assert page.locator("#decisions b, #rendered b, #decisions script").count() == 0
    assert page.inner_text("#rendered").startswith("<haki_memory>")
    page.close()


def test_a_key_of_another_project_sees_none_of_it(
    haki_server: Server, clients_data_dir: Path, browser: Browser, memory: dict[str, Any]
):
    printed = run_cli(clients_data_dir, "keys", "create", "--org", "elsewhere", "--project",
                      "console-other", "--create-project", "--label", "console test")
    key = re.search(r"^key:\s+(hk_\S+)$", printed, re.M).group(1)

    # Its own project: nothing of the demo project's calls, memory or charts.
    page = browser.new_page(viewport=WIDE)
    log_in(page, haki_server.url, "console-other", key)
    assert listed(page) == []
    visit(page, f"{haki_server.url}/console/#view=call&trace={memory['language']}"
                f"&subject={SUBJECT}")
    assert "trace_not_found" in page.inner_text("#status")
    visit(page, f"{haki_server.url}/console/#view=memory&subject={SUBJECT}")
    assert "No open conflict" in page.inner_text("#conflicts")
    assert page.locator("#fact-groups tr[data-fact-id]").count() == 0
    assert page.locator("#episodes li").count() == 0
    shoot(page, "8-other-project")
    visit(page, f"{haki_server.url}/console/#view=charts&days=7")
    assert "No call in this window" in page.inner_text("#chart-grid")
    # A fresh project's first call: one bucket, drawn as bars and markers on padded axes.
    with HakiClient(haki_server.url, key) as haki:
        haki.context("first-user", "Anything yet?")
    visit(page, f"{haki_server.url}/console/#view=charts&days=7&subject=first-user")
    kinds = dict(page.eval_on_selector_all(
        "#chart-grid .chart", "cs => cs.map(c => [c.dataset.chart, c.dataset.kind])"))
    assert kinds == {"calls": "bars", "latency_p50_ms": "line", "injection_rate": "rate",
                     "tokens_served": "bars", "used_share": "rate", "calls_with_missing": "bars",
                     "tokens_per_used_item": "line"}
    ranges = dict(page.eval_on_selector_all(
        "#chart-grid .chart", "cs => cs.map(c => [c.dataset.chart, c.dataset.yRange])"))
    assert ranges["injection_rate"] == "0,1" and ranges["calls"] == "0,1.2"
    shoot(page, "8b-fresh-project-charts")
    page.close()

    # The demo project named with this key: the API refuses every request the page makes.
    page = browser.new_page(viewport=WIDE)
    answers: list[tuple[str, int]] = []
    page.on("response", lambda r: answers.append((r.url, r.status)) if "/v1/" in r.url else None)
    log_in(page, haki_server.url, DEMO_PROJECT, key)
    for view in (f"view=call&trace={memory['language']}&subject={SUBJECT}",
                 f"view=memory&subject={SUBJECT}", "view=charts&days=7"):
        visit(page, f"{haki_server.url}/console/#{view}")
        assert "forbidden_scope" in page.inner_text("#status")
    assert answers and {status for _, status in answers} == {403}
    assert listed(page) == []
    page.close()

    # And each route the page uses, asked directly.
    scope = f"project_id={DEMO_PROJECT}&subject_id={SUBJECT}"
    for path in (f"/v1/calls?{scope}", f"/v1/calls/{memory['language']}?{scope}",
                 f"/v1/stats/series?{scope}", f"/v1/events?{scope}", f"/v1/facts?{scope}",
                 f"/v1/conflicts?{scope}"):
        assert http(haki_server.url + path, key)[0] == 403, path
        assert http(haki_server.url + path)[0] == 401, path


# --------------------------------------------------------------------- the key and links


def test_a_key_in_a_link_is_never_taken(haki_server: Server, browser: Browser):
    page = browser.new_page(viewport=WIDE)
    page.goto(f"{haki_server.url}/console/#project={DEMO_PROJECT}&key={haki_server.key}"
              "&view=memory")
    page.wait_for_selector("#login", state="visible")
    assert page.evaluate("sessionStorage.getItem('haki.console.key')") is None
    assert haki_server.key not in page.url and "view=memory" in page.url
    assert "not used" in page.inner_text("#status")
    # The project the link names fills the form; the key is the user's to paste.
    assert page.input_value("#login-project") == DEMO_PROJECT
    assert page.input_value("#key") == ""
    assert page.is_hidden("#app")
    page.close()


def test_a_link_to_another_project_does_not_switch_a_signed_in_tab(
    haki_server: Server, browser: Browser, memory: dict[str, Any]
):
    page = browser.new_page(viewport=WIDE)
    log_in(page, haki_server.url, DEMO_PROJECT, haki_server.key)
    other_key = "hk_" + "0" * 40
    link = f"{haki_server.url}/console/#project=console-other&key={other_key}"
    visit(page, link)
    # Still the same project, with the same key and its calls; the choice is offered.
    assert page.evaluate("sessionStorage.getItem('haki.console.project')") == DEMO_PROJECT
    assert page.evaluate("sessionStorage.getItem('haki.console.key')") == haki_server.key
    assert other_key not in page.url and "console-other" not in page.url
    assert memory["language"] in listed(page)
    assert page.is_visible("#switch")
    assert "console-other" in page.inner_text("#switch")
    assert DEMO_PROJECT in page.inner_text("#project")

    # Staying keeps the tab as it was.
    page.click("#switch-stay")
    assert page.is_hidden("#switch") and page.is_visible("#app")

    # Switching asks for the other project's key: the form, its project filled, no key.
    visit(page, link.replace("&key=", "&x="))
    page.click("#switch-go")
    page.wait_for_selector("#login", state="visible")
    assert page.input_value("#login-project") == "console-other"
    assert page.input_value("#key") == ""
    assert page.evaluate("sessionStorage.getItem('haki.console.key')") is None
    assert page.is_hidden("#app")


def test_calls_with_missing_memory_open_on_why_it_was_not_served(
    haki_server: Server, browser: Browser
):
    """Feedback in the page: the quality charts, the list of calls with missing memory
    reported, and a call opened from it with the missing item's own decision highlighted."""
    subject = "console-feedback"
    with HakiClient(haki_server.url, haki_server.key, project_id=DEMO_PROJECT) as haki:
        facts = [haki.record_fact(subject, "preferred_language", "Portuguese"),
                 haki.record_fact(subject, "billing_city", "Porto, Rua das Flores 12"),
                 haki.record_fact(subject, "pet", "a parrot named Kiwi")]
        call = haki.context(subject, "Which language and which billing city for the invoice?",
                            purpose="support_reply", budget_tokens=20)  # one fact's block
        decisions = {d.fact_id: d for d in haki.inspect(call.trace_id, subject_id=subject)
                     .decisions if d.fact_id}
        kept = call.packet.facts[0].id
        # Memory the call did not serve: one it decided against, and the others.
        unserved = [f.id for f in facts if f.id not in {p.id for p in call.packet.facts}]
        squeezed = next(i for i in unserved if i in decisions)
        assert decisions[squeezed].action != "included"
        haki.feedback(call.trace_id, subject_id=subject, used=[kept], missing=unserved,
                      verdict="unhelpful", note="<b>needed the city</b>")
        series = haki.stats_series(days=1, granularity="hour", subject_id=subject)
        assert series.points[-1].calls_with_missing == 1

    page = browser.new_page(viewport=WIDE)
    log_in(page, haki_server.url, DEMO_PROJECT, haki_server.key)
    visit(page, f"{haki_server.url}/console/#view=charts&days=1&subject={subject}")
    charted = page.eval_on_selector_all("#chart-grid .chart", "cs => cs.map(c => c.dataset.chart)")
    assert {"used_share", "calls_with_missing", "tokens_per_used_item"} <= set(charted)
    link = page.locator(f"#missing-calls li[data-trace-id='{call.trace_id}'] a")
    assert link.count() == 1
    assert f"{len(unserved)} missing" in page.inner_text(
        f"#missing-calls li[data-trace-id='{call.trace_id}']")
    shoot(page, "8-missing-calls")

    settled(page, lambda: link.click())
    assert f"trace={call.trace_id}" in page.url and not page.is_hidden("#feedback-panel")
    highlighted = dict(page.eval_on_selector_all(
        "#decisions tr.missing", "rows => rows.map(r => [r.dataset.id, r.dataset.action])"))
    assert highlighted == {str(i): decisions[i].action for i in unserved if i in decisions}
    assert page.eval_on_selector_all("#decisions tr.used",
                                     "rows => rows.map(r => r.dataset.id)") == [str(kept)]
    why = dict(page.eval_on_selector_all(
        "#why-missing li", "items => items.map(i => [i.dataset.missingId, i.dataset.decision])"))
    assert why == {str(i): decisions[i].action if i in decisions else "none" for i in unserved}
    reasons = page.inner_text("#why-missing")
    assert decisions[squeezed].reason_code in reasons
    # The note is tenant text: shown as text, never as markup.
    assert "<b>needed the city</b>" in page.inner_text("#feedback")
    assert page.locator("#feedback b").count() == 0
    shoot(page, "9-why-missing")
    page.close()
