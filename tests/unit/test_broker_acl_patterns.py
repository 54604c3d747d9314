"""ACL building blocks: white-address patterns in Apache's forms, and the permission model."""

from __future__ import annotations

import pytest

from broker.acl.addresses import compile_pattern, host_of
from broker.acl.errors import AclError
from broker.acl.permission import (
    ANY,
    DENY,
    PUB,
    SUB,
    check_permission,
    check_resource_perms,
    parse_perm,
    split_resource_perm,
)


@pytest.mark.parametrize(
    ("pattern", "inside", "outside"),
    [
        ("*", ["10.0.0.1", "::1"], []),
        ("*.*.*.*", ["192.168.3.4"], []),
        ("192.168.0.*", ["192.168.0.0", "192.168.0.255"], ["192.168.1.1", "10.168.0.1", "::1"]),
        ("192.168.1.1-5", ["192.168.1.1", "192.168.1.5"], ["192.168.1.6", "192.168.1.0", "192.168.2.3"]),
        ("10.*.*.*", ["10.1.2.3", "10.255.0.0"], ["11.1.2.3"]),
        ("192.168.*.*", ["192.168.200.7"], ["192.169.0.1"]),
        ("192.168.1.{1,2,3}", ["192.168.1.1", "192.168.1.3"], ["192.168.1.4", "192.168.1.11"]),
        ("192.168.1.1,192.168.1.9", ["192.168.1.9"], ["192.168.1.2"]),
        ("127.0.0.1", ["127.0.0.1"], ["127.0.0.2"]),
        (
            "1:2:3:4:5:6:7:*",
            ["1:2:3:4:5:6:7:ffff", "0001:0002:0003:0004:0005:0006:0007:0000"],
            ["1:2:3:4:5:6:8:1"],
        ),
        ("1:2:3:4:5:6:7:1-ff", ["1:2:3:4:5:6:7:ff"], ["1:2:3:4:5:6:7:100", "1:2:3:4:5:6:8:1"]),
        (
            "2::ac5:78:1-200:*",
            ["2::ac5:78:200:9", "2:0:0:0:ac5:78:1:0"],
            ["2::ac5:78:201:9", "2::ac5:79:1:0"],
        ),
        ("::1", ["0:0:0:0:0:0:0:1"], ["::2", "127.0.0.1"]),
        ("2001:db8::{1,a}", ["2001:db8::a", "2001:db8:0:0:0:0:0:1"], ["2001:db8::b"]),
    ],
)
def test_patterns_match_as_apache_reads_them(pattern: str, inside: list[str], outside: list[str]) -> None:
    matcher = compile_pattern(pattern)
    for host in inside:
        assert matcher.matches(host), f"{pattern} should let {host} in"
    for host in outside:
        assert not matcher.matches(host), f"{pattern} should keep {host} out"


def test_a_blank_pattern_matches_nobody() -> None:
    for blank in (None, "", "   "):
        assert not compile_pattern(blank).matches("127.0.0.1")


def test_only_the_first_range_octet_is_checked_as_in_apache() -> None:
    # Apache's RangeRemoteAddressStrategy stops at the first ranged octet: what follows is not compared.
    assert compile_pattern("10.1.*.7").matches("10.1.9.200")


@pytest.mark.parametrize(
    "pattern",
    [
        "192.168.1",
        "192.168.1.300",
        "192.168.1.5-2",
        "192.168.1.-5",
        "not-an-ip",
        "1.2.3.4,5",
        "1.2.{3,4}",
        "1:*:3",
    ],
)
def test_malformed_patterns_are_refused_at_load(pattern: str) -> None:
    with pytest.raises(AclError):
        compile_pattern(pattern)


def test_host_of_cuts_the_port_at_the_last_colon() -> None:
    assert host_of("192.168.1.2:10911") == "192.168.1.2"
    assert host_of("::1:5555") == "::1"
    assert host_of("[::1]:5555") == "::1"
    assert host_of("10.0.0.1") == "10.0.0.1"


def test_permission_words_and_bits_are_apaches() -> None:
    assert (DENY, ANY, PUB, SUB) == (1, 2, 4, 8)
    assert parse_perm("PUB") == PUB
    assert parse_perm(" SUB ") == SUB
    assert parse_perm("PUB|SUB") == parse_perm("SUB|PUB") == PUB | SUB
    assert parse_perm("DENY") == DENY
    assert parse_perm(None) == DENY  # a missing default is a refusal
    assert parse_perm("pub") == DENY  # words are case-sensitive; unknown reads as DENY


@pytest.mark.parametrize(
    ("needed", "owned", "allowed"),
    [
        (PUB, PUB, True),
        (PUB, SUB, False),
        (SUB, PUB | SUB, True),
        (PUB, DENY, False),
        (PUB, DENY | PUB, False),  # DENY wins over anything held beside it
        (ANY, SUB, True),
        (ANY, PUB, True),
        (ANY, DENY, False),
    ],
)
def test_check_permission(needed: int, owned: int, allowed: bool) -> None:
    assert check_permission(needed, owned) is allowed


def test_resource_entries() -> None:
    assert split_resource_perm("topicA = PUB|SUB", "topic") == ("topicA", PUB | SUB)
    with pytest.raises(AclError, match="Parse resource permission failed for topic:topicA"):
        split_resource_perm("topicA", "topic")
    with pytest.raises(AclError):
        split_resource_perm("a=b=c", "group")
    check_resource_perms(["a=PUB", "b=DENY", "c=SUB|PUB"])
    with pytest.raises(AclError, match="The expected permissions are"):
        check_resource_perms(["a=WRITE"])
    with pytest.raises(AclError, match="The expected resource format is 'Res=Perm'"):
        check_resource_perms(["a"])
