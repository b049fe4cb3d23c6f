"""Encrypted reasoning items for the Responses emulator: sealed to their issuer, checked on replay.

A real provider returns ``encrypted_content`` only it can read, bound to the organisation that
made it (developers.openai.com/api/docs/guides/reasoning; "could not be verified" for another
organisation's items: NousResearch/hermes-agent#32617). The
emulator imitates that with authenticated encryption (encrypt-then-MAC from HMAC-SHA256 alone, so
no extra dependency): the plaintext — the reasoning, and the id of the output item it led to — is
XORed with an HMAC keystream and tagged with an HMAC over the issuer, the nonce and the
ciphertext. Both keys derive from (secret, issuer), so an item opens only at its issuer; a clear
issuer tag in the header lets the emulator tell "another organisation's item" from "an edited
item", the way the real error wordings differ.

The value looks like a Fernet token (``gAAAAAB`` + URL-safe base64), as OpenAI's do. The nonce
derives from the plaintext and a counter, so values are deterministic across runs and restarts.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
from dataclasses import dataclass
from typing import Literal

import orjson

DEFAULT_SECRET = b"thoughtline-responses-emulator-secret-v1"
PREFIX = "gAAAAAB"
_VERSION = b"\x01"
_ISSUER_TAG = 8
_NONCE = 16
_TAG = 32

Verdict = Literal["ok", "foreign", "altered"]


@dataclass(frozen=True, kw_only=True, slots=True)
class Opened:
    """What a replayed value turned out to be; ``plaintext`` only when it is ``ok``."""

    verdict: Verdict
    plaintext: dict[str, str] | None = None


def _mac(key: bytes, data: bytes) -> bytes:
    return hmac.new(key, data, hashlib.sha256).digest()


class Sealer:
    """Seals and opens one issuer's encrypted items."""

    def __init__(self, issuer: str, secret: bytes = DEFAULT_SECRET) -> None:
        self.issuer = issuer
        self._tag = hashlib.sha256(issuer.encode()).digest()[:_ISSUER_TAG]
        self._enc = _mac(secret, b"enc\0" + issuer.encode())
        self._auth = _mac(secret, b"mac\0" + issuer.encode())
        self._counter = 0

    def _stream(self, nonce: bytes, length: int) -> bytes:
        out = b""
        block = 0
        while len(out) < length:
            out += _mac(self._enc, nonce + block.to_bytes(4, "big"))
            block += 1
        return out[:length]

    def seal(self, plaintext: dict[str, str]) -> str:
        data = orjson.dumps(plaintext, option=orjson.OPT_SORT_KEYS)
        self._counter += 1
        nonce = _mac(self._enc, b"nonce" + self._counter.to_bytes(8, "big") + data)[:_NONCE]
        cipher = bytes(a ^ b for a, b in zip(data, self._stream(nonce, len(data)), strict=True))
        head = _VERSION + self._tag + nonce
        tag = _mac(self._auth, self.issuer.encode() + b"\0" + head + cipher)
        return PREFIX + base64.urlsafe_b64encode(head + cipher + tag).decode("ascii")

    def open(self, value: object) -> Opened:
        if not isinstance(value, str) or not value.startswith(PREFIX):
            return Opened(verdict="altered")
        try:
            blob = base64.urlsafe_b64decode(value[len(PREFIX):].encode("ascii"))
        except (binascii.Error, UnicodeEncodeError, ValueError):
            return Opened(verdict="altered")
        if base64.urlsafe_b64encode(blob).decode("ascii") != value[len(PREFIX):]:
            return Opened(verdict="altered")
        header = 1 + _ISSUER_TAG + _NONCE
        if len(blob) < header + _TAG or blob[:1] != _VERSION:
            return Opened(verdict="altered")
        if not hmac.compare_digest(blob[1:1 + _ISSUER_TAG], self._tag):
            return Opened(verdict="foreign")
        head, cipher, tag = blob[:header], blob[header:-_TAG], blob[-_TAG:]
        if not hmac.compare_digest(tag, _mac(self._auth, self.issuer.encode() + b"\0" + head
                                              + cipher)):
            return Opened(verdict="altered")
        nonce = head[1 + _ISSUER_TAG:]
        data = bytes(a ^ b for a, b in zip(cipher, self._stream(nonce, len(cipher)),
                                           strict=True))
        try:
            plaintext = orjson.loads(data)
        except orjson.JSONDecodeError:
            return Opened(verdict="altered")
        return Opened(verdict="ok", plaintext=plaintext)
