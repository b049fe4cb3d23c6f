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


def test_a_value_checked_once_is_remembered_per_tenant_and_a_long_one_is_not(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A client resends every minted value on every request: each is checked once (issue 45),
    and what is remembered is the answer for that tenant, forgeries included."""
    minter = Minter(KEY)
    value = minter.mint("gw:alice", "msg_0123456789abcdef")
    forged = value[:-1] + ("A" if value[-1] != "A" else "B")
    macs: list[str] = []
    mac = Minter._mac

    def counted(self: Minter, tenant: str, ref: str) -> str:
        macs.append(tenant)
        return mac(self, tenant, ref)

    monkeypatch.setattr(Minter, "_mac", counted)
    for _ in range(3):
        assert minter.verify("gw:alice", value) == "msg_0123456789abcdef"
        assert minter.verify("gw:bob", value) is None
        assert minter.verify("gw:alice", forged) is None
    assert macs == ["gw:alice", "gw:bob", "gw:alice"]  # one MAC each, the first time
    assert minter.verify("gw:alice", value + "x" * 10_000) is None
    assert len(minter._known) == 3  # a value longer than any minted one is not kept
