"""The console in the synthesized stack: its page and files served under the API's own
domain by the console function, and every data route the page reads or writes kept behind
the tenant's key."""

import re
from collections.abc import Callable
from typing import Any

import pytest
from infra_synth import ROOT, Synth

from haki_aws.routes import ROUTES

CONSOLE_JS = ROOT / "functions" / "console" / "static" / "console.js"


@pytest.fixture(scope="module")
def synth(synth_factory: Callable[[dict[str, Any]], Synth]) -> Synth:
    return synth_factory({})


def _methods(synth: Synth) -> dict[tuple[str, str], dict[str, Any]]:
    paths = synth.resource_paths()
    return {(m["Properties"]["HttpMethod"], paths[m["Properties"]["ResourceId"]["Ref"]]):
            m["Properties"] for m in synth.resources("AWS::ApiGateway::Method").values()}


def test_the_page_and_its_files_are_served_by_the_console_function(synth: Synth) -> None:
    console = synth.logical_id(synth.stack.console.function)
    methods = _methods(synth)
    for path in ("/console", "/console/{asset}"):
        props = methods[("GET", path)]
        assert props["Integration"]["Type"] == "AWS_PROXY"
        targets = [part["Fn::GetAtt"][0] for part in props["Integration"]["Uri"]["Fn::Join"][1]
                   if "Fn::GetAtt" in part]
        assert targets == [console], path
        assert props["AuthorizationType"] == "NONE"
    function = synth.resources("AWS::Lambda::Function")[console]["Properties"]
    assert function["Handler"] == "app.handler" and "VpcConfig" not in function
    # Public methods: a flood of page loads is capped by the function's own reservation.
    assert function["ReservedConcurrentExecutions"] == 10
    assert "Layers" not in function  # standard library only
    # The staged code holds the handler, the page and the vendored chart library.
    asset = function["Code"]["S3Key"].removesuffix(".zip")
    staged = synth.outdir / f"asset.{asset}"
    for name in ("app.py", "static/index.html", "static/console.js", "static/console.css",
                 "static/vendor/uPlot.iife.min.js", "static/vendor/uPlot.min.css",
                 "static/vendor/uPlot.LICENSE"):
        assert (staged / name).is_file(), name


def test_every_route_the_page_calls_requires_the_tenants_key(synth: Synth) -> None:
    # The routes the page's script calls: `api("calls", …)`, `allOf("facts", …)`,
    # `api(\`conflicts/…/resolve\`, …)`.
    called = set(re.findall(r'(?:api|allOf)\(`?"?([a-z/]+)', CONSOLE_JS.read_text()))
    assert {"calls", "calls/", "conflicts", "conflicts/", "events", "facts",
            "stats/series"} <= called
    routes = {(r.method, r.path) for r in ROUTES}
    used = {route for route in routes
            if any(route[1].removeprefix("/v1/").startswith(prefix) for prefix in called)}
    assert ("POST", "/v1/conflicts/{conflict_id}/resolve") in used
    assert ("GET", "/v1/calls/{trace_id}") in used
    methods = _methods(synth)
    for route in used:
        props = methods[route]
        keyed = (props.get("AuthorizationType", "NONE") != "NONE"
                 or props.get("RequestParameters", {}).get("method.request.header.Authorization"))
        assert keyed, route
        assert props["Integration"]["Type"] == "AWS_PROXY"  # the function checks the key


def test_the_console_function_serves_what_the_page_links() -> None:
    from functions.console.app import answer

    page = answer("GET", "/console/")
    assert page[0] == 200
    for linked in re.findall(rb'(?:src|href)="([^"#]+)"', page[2]):
        status, headers, _ = answer("GET", f"/console/{linked.decode()}")
        assert status == 200, linked
        assert "script-src 'self'" in headers["Content-Security-Policy"]
    assert answer("GET", "/console")[0] == 301
    assert answer("GET", "/console/static/vendor/README.md")[0] == 404
    assert answer("DELETE", "/console/")[0] == 405
