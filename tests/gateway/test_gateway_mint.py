"""Minted values (``gateway.mint``): they verify for the tenant and reference they were made for,
and for nothing else — a forged MAC, another tenant, another key, a damaged or foreign value."""

from __future__ import annotations

import pytest

from thoughtline.codecs.face import MINT_PREFIX, is_minted
from thoughtline.gateway.mint import MINT, Minter, index_key

KEY = bytes(range(32))


def test_round_trip_and_shape() -> None:
    minter = Minter(KEY)
    value = minter.mint("gw:alice", "msg_0123456789abcdef")
    assert value.startswith(MINT_PREFIX) and is_minted(value)
    assert minter.verify("gw:alice", value) == "msg_0123456789abcdef"
    assert Minter(KEY).verify("gw:alice", value) == "msg_0123456789abcdef"  # a restart
    assert index_key("msg_0123456789abcdef").kind == MINT


@pytest.mark.parametrize("tamper", [
    lambda v: v[:-1] + ("A" if v[-1] != "A" else "B"),         # MAC changed
    lambda v: v.replace("msg_0123", "msg_9123"),                 # reference changed
    lambda v: v.split(".")[0],                                   # MAC cut off
    lambda v: v + "x",                                           # MAC too long
    lambda v: v[len(MINT_PREFIX):],                              # prefix removed
    lambda v: "tl1:",                                            # nothing
    lambda v: "EqQKCAEQARgCIkDn3dgnObAqLcoaQ==",                 # a provider's signature
])
def test_tampered_values_name_nothing(tamper) -> None:  # type: ignore[no-untyped-def]
    minter = Minter(KEY)
    value = minter.mint("gw:alice", "msg_0123456789abcdef")
    assert minter.verify("gw:alice", tamper(value)) is None


def test_other_tenant_or_key_names_nothing() -> None:
    value = Minter(KEY).mint("gw:alice", "msg_0123456789abcdef")
    assert Minter(KEY).verify("gw:bob", value) is None
    assert Minter(bytes(32)).verify("gw:alice", value) is None


def test_references_are_checked() -> None:
    with pytest.raises(ValueError):
        Minter(KEY).mint("", "bad ref with spaces")
    with pytest.raises(ValueError):
        Minter(b"short")
