"""Reading a rejected Converse request: which documented wording it is, and what to learn.

The one place this codec matches provider error text, table-driven (house style). Bedrock answers
a rejected request with HTTP 400 ``{"message": "…"}`` (a ValidationException). The wordings and
their sources (public threads at each entry; recorded bodies in ``tests/fixtures/errors``):

- ``This model doesn't support the <field> field. Remove <field> and try again.`` — the family of
  the recorded ``temperature`` / ``s3Uri`` rejections; for reasoning it names
  ``reasoningContent.reasoningText.signature`` (gpt-oss, strands-agents #682) or
  ``reasoningContent.reasoningText.text`` (GPT-5.6 / xAI, inspect_ai #5217): drop that field;
- ``User messages cannot contain reasoning content.`` (DeepSeek-R1, langchain-aws #401): drop
  all reasoning;
- ``Encrypted content cannot be used in a different region from the one that created it.``
  (Kimi K3 through a global profile, hermes-agent #115865): drop the opaque value;
- ``Invalid `signature` in `thinking` block`` / ``Invalid 'data' in 'redacted_thinking' block``
  (Claude; anthropics/claude-code#10627, tests/fixtures/SOURCES.md category 7): fingerprint the
  blocks it names (or every one sent), never send them again.

Only 4xx (or no status) is read; a rejection that teaches nothing new gives no lesson, so the
error surfaces instead of a second identical request.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from thoughtline.codecs.bedrock.turns import Sent
from thoughtline.codecs.bedrock.wire import CARRIERS, REASONING, REASONING_TEXT, REDACTED, SIGNATURE

_UNSUPPORTED_FIELD = re.compile(r"doesn't support the ([\w.]+) field")
_PATH = re.compile(r"messages\.(\d+)\.content\.(\d+)")


@dataclass(frozen=True, kw_only=True, slots=True)
class Reading:
    """What one body says: carriers to drop, or rejected values to fingerprint."""

    wording: str
    drop: frozenset[str] = frozenset()
    fingerprints: frozenset[str] = frozenset()


@dataclass(frozen=True, kw_only=True, slots=True)
class _Phrase:
    id: str
    phrase: str
    drop: frozenset[str] = frozenset()
    fingerprint: bool = False


_PHRASES = (
    _Phrase(id="bedrock-reasoning-not-allowed", phrase="cannot contain reasoning content",
            drop=frozenset({REASONING})),
    _Phrase(id="bedrock-region-bound", phrase="cannot be used in a different region",
            drop=frozenset({REDACTED})),
    _Phrase(id="claude-invalid-signature", phrase="invalid `signature`", fingerprint=True),
    _Phrase(id="claude-invalid-signature", phrase="invalid signature", fingerprint=True),
    _Phrase(id="claude-invalid-redacted", phrase="invalid 'data' in 'redacted_thinking'",
            fingerprint=True),
)


def _field_drop(field: str) -> frozenset[str]:
    """The carriers an unsupported-field wording names (none when it is not reasoning)."""
    last = field.rsplit(".", 1)[-1]
    if REASONING not in field and last not in CARRIERS:
        return frozenset()
    if last == SIGNATURE:
        return frozenset({SIGNATURE})
    if last in ("text", REASONING_TEXT):
        return frozenset({REASONING_TEXT})
    if last == REDACTED:
        return frozenset({REDACTED})
    return frozenset({REASONING})


def read(status: int | None, body: str, sent: Sequence[Sent]) -> Reading | None:
    """The documented wording in a 4xx ``body``, or None when it is not one of them."""
    if status is not None and not 400 <= status < 500:
        return None
    lowered = body.lower()
    field = _UNSUPPORTED_FIELD.search(body)
    if field is not None:
        drop = _field_drop(field.group(1))
        return Reading(wording="bedrock-unsupported-field", drop=drop) if drop else None
    for phrase in _PHRASES:
        if phrase.phrase not in lowered:
            continue
        if not phrase.fingerprint:
            return Reading(wording=phrase.id, drop=phrase.drop)
        named = {(int(m), int(b)) for m, b in _PATH.findall(body)}
        hits = [s.fingerprint for s in sent if (s.message, s.block) in named]
        chosen = hits or [s.fingerprint for s in sent]
        return Reading(wording=phrase.id, fingerprints=frozenset(chosen))
    return None


def describe(reading: Reading, model: str) -> str:
    if reading.fingerprints:
        return (f"{model} rejected {len(reading.fingerprints)} replayed reasoning block(s); "
                "retrying once without them (remembered for this session)")
    what = ", ".join(sorted(reading.drop))
    return f"{model} rejected replayed {what}; retrying once without it (learned for this model)"
