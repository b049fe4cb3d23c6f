"""Anthropic on-demand compaction as the summarizer (``[compaction] native = true``).

Facts (platform.claude.com/docs/en/build-with-claude/compaction-on-demand): the beta
``compact-2026-09-04`` and a top-level ``compaction`` parameter make the API answer with one
``compaction`` block holding a readable summary (``content``) and a ``signature``, sent back as
received; supported on Fable/Mythos 5.x, Opus 5/5.5, Sonnet 5/5.5, Haiku 5.5, Opus 4.6–4.8 and
Sonnet 4.6. The block shape ``{type: "compaction", content}`` replayed in an assistant turn is the
recorded one (fixtures ``anthropic/pydantic-ai-anthropic-compaction-round-trip.i0.request.json``).
The value of the ``compaction`` parameter is not in our sources: ``{"type": "on_demand"}`` is sent,
and a 400 naming compaction turns native compaction off for the session (the caller falls back).

The block may now carry ``encrypted_content`` in place of (or beside) the ``signature``
(unverified; anthropic-sdk-python's beta types declare both): either counts as
the block's proof, the block goes back whole and only to its issuer (``walk``), and a block
without a readable summary is no summary for us (the caller's own summarizer runs instead).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, TypeGuard

from thoughtline.codecs.anthropic import models
from thoughtline.codecs.anthropic.wire import BETA_HEADER, NS
from thoughtline.messages import Message, Opaque

BETA = "compact-2026-09-04"
PARAM = "compaction"
BLOCK = "compaction"
_NAMES_COMPACTION = re.compile(r"\bcompact(ion)?\b|compact-2026", re.IGNORECASE)


def supports(model: str) -> bool:
    """The models the compaction-on-demand page lists."""
    parsed = models.parse(model)
    if parsed is None:
        return False
    major, minor = parsed.version
    if parsed.family in ("fable", "mythos"):
        return major == 5
    if parsed.family == "opus":
        return (major, minor) in ((5, 0), (5, 5)) or (major == 4 and 6 <= minor <= 8)
    if parsed.family == "sonnet":
        return (major, minor) in ((5, 0), (5, 5), (4, 6))
    if parsed.family == "haiku":
        return (major, minor) == (5, 5)
    return False


@dataclass(frozen=True, kw_only=True, slots=True)
class NativeCompaction:
    """What a summary request needs to ask for the provider's own compaction, and how to read
    and judge its answer. Core code uses only these members, never a field name."""

    params: Mapping[str, Any] = field(default_factory=dict)
    headers: Mapping[str, str] = field(default_factory=dict)
    trigger: Message | None = None  # the parameter asks for it: no extra message

    def read(self, message: Message) -> tuple[str, Opaque] | None:
        """The readable summary and the block itself (verbatim), or None when the answer holds
        no single well-formed signed compaction block."""
        found = [p for p in message.parts if isinstance(p, Opaque) and p.namespace == NS
                 and p.native[NS].get("type") == BLOCK]
        if len(found) != 1:
            return None
        block = found[0].native[NS]
        summary = block.get("content")
        if not isinstance(summary, str) or not summary.strip():
            return None
        proofs = (block.get("signature"), block.get("encrypted_content"))
        if not any(isinstance(proof, str) and proof for proof in proofs):
            return None
        return summary, found[0]

    def names_it(self, status: int | None, body: str) -> bool:
        """A 400 whose message names compaction: native compaction is off for the session."""
        return status == 400 and bool(_NAMES_COMPACTION.search(body or ""))


def native_compaction(model: str, given_headers: Mapping[str, str] | None) -> (
        NativeCompaction | None):
    """The on-demand compaction request for ``model``, or None where it has none."""
    if not supports(model):
        return None
    given = {k.lower(): v for k, v in (given_headers or {}).items()}
    betas = [b.strip() for b in given.get(BETA_HEADER, "").split(",") if b.strip()]
    if BETA not in betas:
        betas.append(BETA)
    return NativeCompaction(params={PARAM: {"type": "on_demand"}},
                            headers={BETA_HEADER: ",".join(betas)})


def is_block(part: object) -> TypeGuard[Opaque]:
    return (isinstance(part, Opaque) and part.namespace == NS
            and part.native[NS].get("type") == BLOCK)


def summary_of(block: Mapping[str, Any]) -> str | None:
    """A compaction block's readable summary (``content``; null: a failed compaction, which
    the API treats as a no-op — the SDK's ``BetaCompactionBlockParam``), None for any other
    block. What an API that cannot take the block gets in its place (``codecs.foreign``)."""
    if block.get("type") != BLOCK:
        return None
    summary = block.get("content")
    return summary if isinstance(summary, str) and summary.strip() else None
