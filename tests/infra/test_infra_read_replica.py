"""The opt-in read replica: with ``haki:read_replica`` (Aurora) the stack gets a
reader instance and a READ_ONLY proxy endpoint, whose host only the inspect and stats
functions receive; without it, none of the three is in the template."""

from collections.abc import Callable
from typing import Any

import pytest
from infra_synth import Synth

from haki_infra.config import HakiConfig


@pytest.fixture(scope="module")
def replica(synth_factory: Callable[[dict[str, Any]], Synth]) -> Synth:
    return synth_factory({"haki:engine": "aurora", "haki:dev": "true",
                          "haki:read_replica": "true"})


@pytest.fixture(scope="module")
def plain(synth_factory: Callable[[dict[str, Any]], Synth]) -> Synth:
    return synth_factory({"haki:engine": "aurora", "haki:dev": "true"})


def _reader_hosts(synth: Synth) -> dict[str, Any]:
    functions = synth.resources("AWS::Lambda::Function")
    hosts = {}
    for key, handler in synth.stack.functions.items():
        env = functions[synth.logical_id(handler.function)]["Properties"]["Environment"]
        if "HAKI_DB_READER_HOST" in env["Variables"]:
            hosts[key] = env["Variables"]["HAKI_DB_READER_HOST"]
    return hosts


def test_the_replica_adds_a_reader_and_a_read_only_endpoint_for_inspect_and_stats(
    replica: Synth,
) -> None:
    assert replica.violations == []
    replica.template.resource_count_is("AWS::RDS::DBInstance", 2)  # writer + reader
    ((endpoint_id, endpoint),) = replica.resources("AWS::RDS::DBProxyEndpoint").items()
    assert endpoint["Properties"]["TargetRole"] == "READ_ONLY"
    hosts = _reader_hosts(replica)
    assert set(hosts) == {"inspect", "stats"}
    for host in hosts.values():
        assert host == {"Fn::GetAtt": [endpoint_id, "Endpoint"]}


def test_without_the_flag_there_is_no_reader_endpoint_nor_reader_host(plain: Synth) -> None:
    plain.template.resource_count_is("AWS::RDS::DBProxyEndpoint", 0)
    plain.template.resource_count_is("AWS::RDS::DBInstance", 1)
    assert _reader_hosts(plain) == {}


def test_the_replica_needs_aurora() -> None:
    with pytest.raises(ValueError, match="engine=aurora"):
        HakiConfig(read_replica=True)
