"""Keeping secrets out of text a provider sent back: error bodies, messages, echoes.

Owns one rule: redact the whole text first, then cut it. Every occurrence of a secret becomes
``***``, and so does any run of ``MIN_PREFIX`` or more of its first characters (a key cut short
by a provider's own truncation, or by ours if the order were reversed, still leaks most of it).
A secret shorter than ``MIN_PREFIX`` is no real key (a placeholder, a typo, a test's ``e``):
masking it inside other words would turn an error message into noise (a key ``e`` made
"Rat*** limit ***xc******d***d"), so it is masked only where it stands alone — not next to a
letter, digit, ``_`` or ``-`` — which is where a text quotes a key: ``Bearer e``, ``x-api-key:
e``, ``?key=e&``, ``"api_key":"e"``. Knows nothing of where the text goes.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

#: The shortest start of a secret that is redacted on its own.
MIN_PREFIX = 8
MASK = "***"


def redact(text: str, secrets: Iterable[str]) -> str:
    """``text`` without any secret, nor any start of one of ``MIN_PREFIX`` characters or more.

    A secret of ``MIN_PREFIX`` characters or more is masked wherever it occurs, inside words too;
    a shorter one only where it stands alone (the module's rule): a one-letter key is never
    written as a value, and no other word loses that letter."""
    for secret in secrets:
        if len(secret) >= MIN_PREFIX:
            text = _without(text, secret)
        elif secret:
            text = _standing_alone(secret).sub(MASK, text)
    return text


def _standing_alone(secret: str) -> re.Pattern[str]:
    """``secret`` where no letter, digit, ``_`` or ``-`` touches it on either side."""
    return re.compile(rf"(?<![\w-]){re.escape(secret)}(?![\w-])")


def _without(text: str, secret: str) -> str:
    text = text.replace(secret, MASK)
    head = secret[:MIN_PREFIX]
    if head not in text:
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
