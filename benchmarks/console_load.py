"""How long the console takes to load with 10,000 calls stored (a benchmark, not a test).

    python -m benchmarks.console_load [--calls 10000] [--loads 7]

Starts ``haki serve --workers 1`` on a scratch data folder (demo data loaded), makes a few real
context calls, then stores ``--calls`` more calls server-side (INSERT ... SELECT, spread over
the 30 days of the retention window, with their traces of 30 decisions each), and loads the
page ``--loads`` times in headless Chromium (Debian's, through Playwright), each in a fresh
page: from navigation to the first view drawn (the calls listed, the newest call opened with
every decision). Also times a search over all the calls (``GET /v1/calls?q=…``) and the
charts view over 30 days. Printed and recorded (``benchmarks/results/console_load.json``):
median and worst of each.
"""

import argparse
import json
import shutil
import statistics
import tempfile
import time
import urllib.request
from pathlib import Path

import psycopg
from playwright.sync_api import Page, sync_playwright

from haki.roles import DATABASE_NAME, Role
from haki_local import launch
from haki_local.demo import DEMO_PROJECT, DEMO_SUBJECT
from haki_local.embedded import embedded_role_url, start_embedded
from haki_local.environment import SOURCE_ROOT

RESULTS = SOURCE_ROOT / "benchmarks" / "results" / "console_load.json"
DECISIONS = 30

#: The stored calls: 50 subjects, spread evenly over the last 30 days, each with a trace.
LOAD_SQL = """
WITH calls AS (
    INSERT INTO context_calls (trace_id, project_id, subject_id, query, purpose,
        budget_tokens, packet, token_count, status, facts_served, episodes_served, candidates,
        embed_ms, retrieval_ms, latency_ms, created_at)
    SELECT gen_random_uuid(), %(project)s, 'bench-' || (g %% 50),
           'synthetic question number ' || g || ' about the invoice', 'support_reply', 800,
           '{"facts": [], "episodes": [], "warnings": [], "status": "ok", "empty_reason": null}',
           600, 'ok', 8, 2, %(decisions)s, 5, 20, 15 + (g %% 40),
           now() - interval '30 days' + (g * %(step)s) * interval '1 second'
    FROM generate_series(1, %(calls)s) AS g
    RETURNING trace_id, created_at, project_id
)
INSERT INTO context_traces (trace_id, created_at, project_id, ordinals, fact_ids, event_ids,
    actions, reasons, ranks, scores, similarities, text_ranks, tokens, unconfirmed,
    vector_ranks, text_arm_ranks, expanded_from)
SELECT trace_id, created_at, project_id, o, array_fill(gen_random_uuid(), %(dims)s::int[]),
       array_fill(NULL::uuid, %(dims)s::int[]), array_fill(1::smallint, %(dims)s::int[]),
       array_fill(1::smallint, %(dims)s::int[]), o, array_fill(0.05::real, %(dims)s::int[]),
       array_fill(0.5::real, %(dims)s::int[]), array_fill(NULL::real, %(dims)s::int[]),
       array_fill(NULL::real, %(dims)s::int[]), array_fill(20, %(dims)s::int[]),
       array_fill(false, %(dims)s::int[]), o, array_fill(NULL::int, %(dims)s::int[]),
       array_fill(NULL::uuid, %(dims)s::int[])
FROM calls, (SELECT array_agg(i) AS o FROM generate_series(0, %(decisions)s - 1) AS i) AS ords
"""


def _rendered(page: Page, before: int) -> None:
    while int(page.evaluate("document.body.dataset.renders || '0'")) <= before:
        page.wait_for_timeout(5)


def _timed_load(page: Page, url: str) -> float:
    start = time.perf_counter()
    page.goto(url)
    _rendered(page, 0)
    return (time.perf_counter() - start) * 1000


def _summary(samples: list[float]) -> dict[str, float]:
    return {"median_ms": round(statistics.median(samples), 1), "worst_ms": round(max(samples), 1),
            "runs": len(samples)}


def _chromium() -> str:
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    if path is None:
        raise SystemExit("Chromium is missing: make browser (or apt-get install chromium)")
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=10_000)
    parser.add_argument("--loads", type=int, default=7)
    args = parser.parse_args()
    data_dir = Path(tempfile.mkdtemp(prefix="haki-console-bench-"))
    api = launch.start(data_dir, "--workers", "1")
    try:
        base = api.url
        for query in ("Which language should we use for Marie's invoice?",
                      "Where does Marie live?", "What did Marie ask last week?"):
            body = json.dumps({"project_id": DEMO_PROJECT, "subject_id": DEMO_SUBJECT,
                               "query": query, "purpose": "support_reply"}).encode()
            request = urllib.request.Request(
                f"{base}/v1/context", body, method="POST",
                headers={"Authorization": f"Bearer {api.key}",
                         "Content-Type": "application/json"})
            urllib.request.urlopen(request, timeout=60).read()
        owner = embedded_role_url(start_embedded(data_dir), Role.OWNER, DATABASE_NAME)
        with psycopg.connect(owner, autocommit=True) as conn:
            conn.execute(LOAD_SQL, {"project": DEMO_PROJECT, "calls": args.calls,
                                    "decisions": DECISIONS, "dims": [DECISIONS],
                                    "step": 30 * 86400 / (args.calls + 1)})
            conn.execute("ANALYZE context_calls")
            conn.execute("ANALYZE context_traces")
            (stored,) = conn.execute("SELECT count(*) FROM context_calls").fetchone() or (0,)

        page_url = f"{base}/console/#project={DEMO_PROJECT}&key={api.key}"
        loads, searches, charts = [], [], []
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=_chromium(),
                                                 args=["--no-sandbox", "--disable-gpu"])
            for _ in range(args.loads):
                page = browser.new_page(viewport={"width": 1280, "height": 1000})
                loads.append(_timed_load(page, page_url))
                rows = page.locator("#calls tbody tr[data-trace-id]").count()
                charts.append(_view(page, "view=charts&days=30"))
                searches.append(_view(page, "view=call&q=number 9999 about"))
                page.close()
            browser.close()
        result = {"calls_stored": stored, "decisions_per_stored_call": DECISIONS,
                  "rows_listed": rows, "page_load": _summary(loads),
                  "search_all_calls": _summary(searches), "charts_30_days": _summary(charts)}
        RESULTS.parent.mkdir(parents=True, exist_ok=True)
        RESULTS.write_text(json.dumps(result, indent=2) + "\n")
        print(json.dumps(result, indent=2))
    finally:
        launch.stop(api)
        shutil.rmtree(data_dir, ignore_errors=True)


def _view(page: Page, fragment: str) -> float:
    """Milliseconds from setting the URL fragment to the view drawn."""
    before = int(page.evaluate("document.body.dataset.renders || '0'"))
    start = time.perf_counter()
    page.evaluate(f"location.hash = {json.dumps(fragment)}")
    _rendered(page, before)
    return (time.perf_counter() - start) * 1000


if __name__ == "__main__":
    main()
