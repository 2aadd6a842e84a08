"""Which Host and Origin headers a server of sieve answers (sieve.serve.hosts), name by name: the
lookalikes a DNS-rebinding page could use are refused, the loopback names and `--allow-host` are not."""

from __future__ import annotations

import argparse

import pytest

from sieve.serve.hosts import HostPolicy, allowed_host, bind_problem, is_loopback

POLICY = HostPolicy.of("127.0.0.1", ["search.example", "pinned.example:8443", "fe80::1"])


@pytest.mark.parametrize("host", ["127.0.0.1:8000", "127.0.0.1", "localhost:1", "LocalHost:8000", "[::1]:8000", "[::1]", "search.example:80",
                                  "SEARCH.example", "pinned.example:8443", "[fe80::1]:8000"])
def test_admitted(host: str) -> None:
    assert POLICY.admits(host)


@pytest.mark.parametrize("host", [None, "", "evil.example", "localhost.evil.example:8000", "127.0.0.1.evil.example", "evil.localhost",
                                  "search.example.evil", "x.search.example", "pinned.example:8444", "pinned.example", "0.0.0.0:8000",
                                  "127.1:8000", "2130706433", "[::1", "::1", "127.0.0.1:", "127.0.0.1:99999", "127.0.0.1:8000 evil",
                                  "user@127.0.0.1", "127.0.0.1:80:80", "local host", "[::2]:8000", "localhost\x00.evil"])
def test_refused(host: str | None) -> None:
    assert not POLICY.admits(host)


@pytest.mark.parametrize(("origin", "ok"), [("http://127.0.0.1:8000", True), ("https://localhost", True), ("http://search.example", True),
                                             ("null", False), ("http://evil.example", False), ("http://127.0.0.1.evil.example", False),
                                             ("http://user@127.0.0.1", False), ("http://127.0.0.1/", False), ("file://", False),
                                             ("ws://127.0.0.1", False), ("http://[::1]:8000", True), ("http://[", False)])
def test_origins(origin: str, ok: bool) -> None:
    assert POLICY.admits_origin(origin) is ok


def test_the_refusals_name_what_was_wrong() -> None:
    assert POLICY.refusal([(b"host", b"127.0.0.1:8000")]) is None
    assert POLICY.refusal([]) == (421, "refused: this request names no Host header; this server answers only to its loopback names "
                                       "(localhost, 127.0.0.1, [::1]) and the names allowed with --allow-host")
    assert POLICY.refusal([(b"host", b"127.0.0.1"), (b"Host", b"evil.example")])[0] == 421  # which one would the app read?
    assert POLICY.refusal([(b"host", b"127.0.0.1"), (b"origin", b"http://evil.example")])[0] == 403


def test_the_bound_address_is_one_of_the_names_unless_a_wildcard() -> None:
    assert HostPolicy.of("192.168.1.5").admits("192.168.1.5:8000") and HostPolicy.of("::").names == ("localhost", "127.0.0.1", "[::1]")
    assert not HostPolicy.of("0.0.0.0").admits("0.0.0.0:8000")


def test_allow_host_values() -> None:
    assert allowed_host("Search.Example") == "search.example" and allowed_host("fe80::1") == "[fe80::1]" and allowed_host("h:80") == "h:80"
    for bad in ("", "a b", "http://x", "x/y", "x:0", "x:70000", "*.example", "-x"):
        with pytest.raises(argparse.ArgumentTypeError, match="is not a host name"):
            allowed_host(bad)


def test_loopback_and_the_bind_rule() -> None:
    assert all(is_loopback(a) for a in ("127.0.0.1", "127.0.0.2", "::1", "localhost"))
    assert not any(is_loopback(a) for a in ("0.0.0.0", "::", "192.168.1.5", "example.org", "localhost.example"))
    assert bind_problem("127.0.0.1", False) is None and bind_problem("0.0.0.0", True) is None
    assert bind_problem("::", False) == ("--host :: is not a loopback address: anyone who can reach it could use this server; "
                                         "add --allow-remote to listen there anyway (and --allow-host NAME for each name clients will use)")
