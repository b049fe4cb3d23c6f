"""Keeping secrets out of text a provider sent back: error bodies, messages, echoes.

Owns one rule: redact the whole text first, then cut it. Every occurrence of a secret becomes
``***``, and so does any run of ``MIN_PREFIX`` or more of its first characters (a key cut short
by a provider's own truncation, or by ours if the order were reversed, still leaks most of it).
Knows nothing of where the text goes.
"""

from __future__ import annotations

from collections.abc import Iterable

#: The shortest start of a secret that is redacted on its own.
MIN_PREFIX = 8
MASK = "***"


def redact(text: str, secrets: Iterable[str]) -> str:
    """``text`` without any secret, nor any start of one of ``MIN_PREFIX`` characters or more."""
    for secret in secrets:
        if secret:
            text = _without(text, secret)
    return text


def _without(text: str, secret: str) -> str:
    text = text.replace(secret, MASK)
    head = secret[:MIN_PREFIX]
    if len(secret) < MIN_PREFIX or head not in text:
        return text
    out: list[str] = []
    start = 0
    while (found := text.find(head, start)) >= 0:
        end = found + len(head)
        while end < len(text) and end - found < len(secret) and text[end] == secret[end - found]:
            end += 1
        out += [text[start:found], MASK]
        start = end
    out.append(text[start:])
    return "".join(out)


def cut(text: str, secrets: Iterable[str], limit: int) -> str:
    """``text`` redacted, then at most ``limit`` characters of it."""
    return redact(text, secrets)[:limit]
