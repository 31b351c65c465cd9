"""Context parsing: what `-c haki:key=value` accepts and what it refuses (no synthesis)."""

from pathlib import Path

import pytest
from aws_cdk import App, Stack
from aws_cdk import aws_logs as logs
from infra_synth import ROOT

from haki_infra.config import DEFAULT_SIZING, NO_DATABASE, Arch, Engine, HakiConfig
from haki_infra.layer import ModelLayer


def test_defaults_are_the_production_deployment() -> None:
    config = HakiConfig.from_context(App().node)
    assert config.engine is Engine.RDS
    assert config.dev is False
    assert config.architecture is Arch.ARM64
    assert config.resolved_layer_dir == ROOT / "build" / "layer" / "arm64"
    assert config.sizing == DEFAULT_SIZING


def test_cli_strings_are_parsed() -> None:
    app = App(
        context={
            "haki:engine": "aurora",
            "haki:dev": "1",
            "haki:architecture": "x86_64",
            "haki:throttle_rate": "12.5",
            "haki:log_retention": "THREE_MONTHS",
            "haki:sizing": '{"inspect": {"reserved_concurrency": null}}',
        }
    )
    config = HakiConfig.from_context(app.node)
    assert config.engine is Engine.AURORA
    assert config.dev is True
    assert config.resolved_layer_dir == ROOT / "build" / "layer" / "x86_64"
    assert config.throttle_rate == 12.5
    assert config.log_retention is logs.RetentionDays.THREE_MONTHS
    assert config.sizing["inspect"].reserved_concurrency is None
    assert config.sizing["inspect"].memory_mb == DEFAULT_SIZING["inspect"].memory_mb
    assert config.sizing["context"] == DEFAULT_SIZING["context"]


@pytest.mark.parametrize(
    "context",
    [
        {"haki:engin": "aurora"},  # a typo must not deploy the default silently
        {"haki:engine": "mysql"},
        {"haki:dev": "maybe"},
        {"haki:sizing": '{"kontext": {"memory_mb": 1}}'},
        {"haki:sizing": '{"context": {"memory": 1}}'},
        {"haki:runtime_env": '{"HAKI_DATABASE_URL": "postgresql://x"}'},
        {"haki:scope_index_rate_minutes": "-5"},
    ],
)
def test_bad_context_is_refused(context: dict[str, str]) -> None:
    with pytest.raises((ValueError, KeyError)):
        HakiConfig.from_context(App(context=context).node)


def test_missing_layer_build_says_how_to_make_it(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="make layer ARCH=arm64"):
        ModelLayer(Stack(App(), "S"), "L", layer_dir=tmp_path, architecture=Arch.ARM64)


def test_every_function_has_a_sizing_and_reservations_stay_under_the_proxy_budget() -> None:
    from haki_infra.stack import SERVICE_FUNCTIONS

    assert {f.key for f in SERVICE_FUNCTIONS} | {"migrate", "console"} == set(DEFAULT_SIZING)
    reserved = sum(s.reserved_concurrency or 0 for name, s in DEFAULT_SIZING.items()
                   if name not in NO_DATABASE)
    # db.t4g.small: ~200 connections, 90% lent to the proxy; the connections alarm is at 150.
    assert reserved <= 100
    # What API Gateway waits for an integration: a longer timeout only runs after the 504.
    assert all(DEFAULT_SIZING[f.key].timeout_s <= 29 for f in SERVICE_FUNCTIONS
               if f.key != "aggregate")


@pytest.mark.parametrize("context", [
    {"haki:domain_name": "memory.example.com"},  # a domain needs its certificate
    {"haki:authorizer_cache_seconds": "3601"},   # API Gateway's ceiling is one hour
    {"haki:waf_rate_limit": "5"},                # AWS WAF's floor is 10
    {"haki:require_api_key": "true"},            # gone: the hk_ key is the only credential
])
def test_edge_settings_out_of_bounds_are_refused(context: dict[str, str]) -> None:
    with pytest.raises(ValueError):
        HakiConfig.from_context(App(context=context).node)
