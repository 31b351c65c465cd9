"""The docs name every route of the table (``haki_aws.routes.ROUTES``) where they list them:
the API reference's table, with the function that serves it, and the deploy guide's sizing
table; and they count them right."""

import re

from haki_aws.routes import ROUTES
from tests.tiers import ROOT

NUMBERS = {14: "Fourteen", 15: "Fifteen", 16: "Sixteen", 17: "Seventeen", 18: "Eighteen"}


def _doc(name: str) -> str:
    return (ROOT / "docs" / name).read_text(encoding="utf-8")


def test_the_api_reference_lists_every_route_with_its_function_and_counts_them() -> None:
    api = _doc("api.md")
    rows = set(re.findall(r"^\| (GET|POST) \| `([^`]+)` \| (\w+) \|", api, re.MULTILINE))
    assert rows == {(r.method, r.path, r.function) for r in ROUTES}
    assert api.splitlines()[2].startswith(f"{NUMBERS[len(ROUTES)]} routes, served by")


def test_the_sizing_table_names_every_route_under_its_function() -> None:
    deploy = _doc("deploy.md")
    table = deploy.split("### Sizing", 1)[1].split("\n\n", 2)[1]
    served = {(method, path, row.split(" | ")[0].strip("| "))
              for row in table.splitlines()
              for method, path in re.findall(r"`(GET|POST) (/v1/[^`]+)`", row)}
    assert served == {(r.method, r.path, r.function) for r in ROUTES}
