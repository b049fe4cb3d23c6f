"""Values the gateway mints: a reference to a stored turn a client can carry but not forge.

A Messages client sends thinking back only with a ``signature``; a Responses client sends a
reasoning item back only with its ``id`` / ``encrypted_content``. For reasoning that came from
another API the gateway puts its own value there: ``tl1:<ref>.<mac>``, where ``ref`` names the
stored turn (the answer's response id, which the turn is indexed under, kind ``MINT``) and ``mac``
is HMAC-SHA256 over the tenant and ``ref`` with a key kept in the store — so gateways sharing a
PostgreSQL database accept each other's values and a restart changes nothing. A value that does
not verify (forged, another tenant's, damaged) names nothing: the request is answered as if the
client had sent no reasoning. Minted values never reach a provider: the client codecs strip them
(they know the ``tl1:`` prefix, not the key).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
from collections.abc import Iterable
from typing import Any

from thoughtline.codecs.face import MINT_PREFIX
from thoughtline.store.rehydration import MINT, IndexKey

#: The store secret the MAC key is kept under.
KEY_NAME = "gateway-mint-v1"

_REF = re.compile(r"[A-Za-z0-9_-]{8,64}")
_MAC_CHARS = 32  # 192 bits of the MAC, base64url
_LONGEST = len(MINT_PREFIX) + 64 + 1 + _MAC_CHARS  # the longest value ``mint`` makes
#: Values a ``Minter`` remembers having checked (each at most ``_LONGEST`` characters).
KNOWN = 65_536


class Minter:
    """Mints and verifies values with one key (the store's, see ``KEY_NAME``)."""

    __slots__ = ("_key", "_known")

    def __init__(self, key: bytes) -> None:
        if len(key) < 16:
            raise ValueError("a minting key needs at least 16 bytes")
        self._key = key
        #: (tenant, value) -> what ``verify`` answered: a client resends every minted value of
        #: its conversation on every request, and the answer depends only on these and the key.
        self._known: dict[tuple[str, str], str | None] = {}

    def _mac(self, tenant: str, ref: str) -> str:
        message = b"thoughtline-mint-v1\0" + tenant.encode() + b"\0" + ref.encode()
        digest = hmac.new(self._key, message, hashlib.sha256).digest()
        return base64.urlsafe_b64encode(digest).decode()[:_MAC_CHARS]

    def mint(self, tenant: str, ref: str) -> str:
        """The value naming the turn stored under ``ref`` for ``tenant``."""
        if not _REF.fullmatch(ref):
            raise ValueError(f"a minted reference must be 8-64 url-safe characters: {ref!r}")
        return f"{MINT_PREFIX}{ref}.{self._mac(tenant, ref)}"

    def verify(self, tenant: str, value: str) -> str | None:
        """The reference ``value`` names when this gateway minted it for ``tenant``, else None
        (remembered: the ``KNOWN`` latest values checked, then forgotten all at once)."""
        if len(value) > _LONGEST:  # (never minted: not remembered either)
            return None
        asked = (tenant, value)
        if asked in self._known:
            return self._known[asked]
        found = self._verify(tenant, value)
        if len(self._known) >= KNOWN:
            self._known.clear()
        self._known[asked] = found
        return found

    def _verify(self, tenant: str, value: str) -> str | None:
        if not value.startswith(MINT_PREFIX):
            return None
        ref, dot, mac = value[len(MINT_PREFIX):].partition(".")
        if not dot or not _REF.fullmatch(ref) or len(mac) != _MAC_CHARS:
            return None
        return ref if hmac.compare_digest(mac, self._mac(tenant, ref)) else None

    def verified(self, tenant: str, echoed: Iterable[Any]) -> tuple[dict[int, str], int]:
        """The references of the echoed minted values (each with its ``message`` index and
        ``value``) that verify for ``tenant``, by message; and how many did not (forged,
        another tenant's, damaged: they name nothing)."""
        out: dict[int, str] = {}
        rejected = 0
        for item in echoed:
            ref = self.verify(tenant, item.value)
            if ref is None:
                rejected += 1
            else:
                out[item.message] = ref
        return out, rejected


def valid_ref(ref: str) -> bool:
    """True when ``ref`` has the shape of a reference (an answer's response id)."""
    return bool(_REF.fullmatch(ref))


def index_key(ref: str) -> IndexKey:
    """The rehydration key a turn is stored (and found) under by its reference."""
    return IndexKey(kind=MINT, key=ref)
