"""Opaque values issued and verified by the loopback emulators.

Owns the one format every emulator uses for values a real provider would make opaque:
Anthropic-style thinking signatures, OpenAI encrypted reasoning, Gemini thought signatures, Copilot
reasoning blobs. Does not own where those values travel on the wire (each emulator decides that).

A value is ``prefix + base64(blob)`` where the blob holds a nonce, a magic marker, the kind, a
digest of the readable text it belongs to, deterministic filler (so the value looks and weighs like
the real thing, 300-400 characters) and an HMAC-SHA256 tag over all of it. Because the tag is keyed
by a fixed default secret, a restarted emulator process still accepts values issued before the
restart; any edited byte, a value of another kind, or a value moved next to different readable text
fails verification.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Literal

DEFAULT_SECRET = b"thoughtline-loopback-emulator-secret-v1"
"""Secret shared by every emulator instance unless one is given, so restarts keep verifying."""

SKIP_THOUGHT_SIGNATURE = "skip_thought_signature_validator"
"""Gemini's documented dummy signature for function calls that did not come from Gemini."""

OpaqueKind = Literal[
    "anthropic-signature", "openai-encrypted", "gemini-signature", "copilot-opaque"
]

_MAGIC = b"\x8btl"
_NONCE_LEN = 12
_DIGEST_LEN = 16
_TAG_LEN = 32
_BLOB_LEN = 258  # base64: 344 characters before the prefix


@dataclass(frozen=True, slots=True)
class _Style:
    code: int
    prefix: str
    urlsafe: bool


# Prefixes only imitate the look of the real values (Fernet tokens start "gAAAAAB").
_STYLES: Mapping[OpaqueKind, _Style] = MappingProxyType(
    {
        "anthropic-signature": _Style(code=1, prefix="Eo", urlsafe=False),
        "openai-encrypted": _Style(code=2, prefix="gAAAAAB", urlsafe=True),
        "gemini-signature": _Style(code=3, prefix="Cq", urlsafe=False),
        "copilot-opaque": _Style(code=4, prefix="", urlsafe=False),
    }
)


def _digest(text: str) -> bytes:
    return hashlib.sha256(text.encode("utf-8")).digest()[:_DIGEST_LEN]


class Signer:
    """Issues opaque values bound to readable text and verifies them later.

    ``issued`` is this instance's registry (value → kind); verification does not depend on it, so a
    fresh instance with the same secret verifies values issued by an earlier one.
    """

    def __init__(self, secret: bytes = DEFAULT_SECRET) -> None:
        self._secret = secret
        self._issued: dict[str, OpaqueKind] = {}

    @property
    def issued(self) -> Mapping[str, OpaqueKind]:
        return MappingProxyType(self._issued)

    def _mac(self, data: bytes) -> bytes:
        return hmac.new(self._secret, data, hashlib.sha256).digest()

    def issue(self, kind: OpaqueKind, text: str) -> str:
        """A value of ``kind`` bound to ``text``; the same (kind, text) gives the same value."""
        style = _STYLES[kind]
        digest = _digest(text)
        nonce = self._mac(b"nonce" + bytes([style.code]) + digest)[:_NONCE_LEN]
        head = nonce + _MAGIC + bytes([style.code]) + digest
        filler_len = _BLOB_LEN - len(head) - _TAG_LEN
        filler = b""
        counter = 0
        while len(filler) < filler_len:
            filler += self._mac(b"fill" + nonce + counter.to_bytes(2, "big"))
            counter += 1
        body = head + filler[:filler_len]
        blob = body + self._mac(body)
        encode = base64.urlsafe_b64encode if style.urlsafe else base64.b64encode
        value = style.prefix + encode(blob).decode("ascii")
        self._issued[value] = kind
        return value

    def verify(self, kind: OpaqueKind, value: object, text: str | None = None) -> bool:
        """True when ``value`` is exactly a value issued for ``kind`` (and ``text``, if given)."""
        blob = _decode(kind, value)
        if blob is None or len(blob) != _BLOB_LEN:
            return False
        body, tag = blob[:-_TAG_LEN], blob[-_TAG_LEN:]
        if not hmac.compare_digest(tag, self._mac(body)):
            return False
        marker = _MAGIC + bytes([_STYLES[kind].code])
        if body[_NONCE_LEN : _NONCE_LEN + len(marker)] != marker:
            return False
        if text is None:
            return True
        start = _NONCE_LEN + len(marker)
        return hmac.compare_digest(body[start : start + _DIGEST_LEN], _digest(text))


def _decode(kind: OpaqueKind, value: object) -> bytes | None:
    style = _STYLES[kind]
    if not isinstance(value, str) or not value.startswith(style.prefix):
        return None
    encoded = value[len(style.prefix) :]
    try:
        if style.urlsafe:
            blob = base64.urlsafe_b64decode(encoded.encode("ascii"))
        else:
            blob = base64.b64decode(encoded.encode("ascii"), validate=True)
    except (binascii.Error, UnicodeEncodeError, ValueError):
        return None
    # Reject values that decode to the same bytes but are not the exact text issued.
    encode = base64.urlsafe_b64encode if style.urlsafe else base64.b64encode
    if encode(blob).decode("ascii") != encoded:
        return None
    return blob
