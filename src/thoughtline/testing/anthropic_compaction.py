"""On-demand compaction in the Anthropic emulator, from the documented shapes.

Rules, each with its source:
- The beta ``compact-2026-09-04`` and a top-level ``compaction`` parameter ask for on-demand
  compaction; the answer is one ``compaction`` block with a readable summary and a signature
  (platform.claude.com/docs/en/build-with-claude/compaction-on-demand). Without the beta the
  parameter is refused with a 400 naming it (the API's usual wording for a beta-gated setting, as
  ``thinking.block_binding``'s: preserved-thinking page).
- Only the models the compaction page lists support it; any other model gets a 400 naming
  compaction (Hermes Agent turns native compaction off on such a 400).
- A ``compaction`` block goes back as received, in an assistant turn (recorded:
  ``fixtures/anthropic/pydantic-ai-anthropic-compaction-round-trip.i0.request.json``); its
  signature must be intact and issued to this account (compaction page: sent back as
  received; a changed summary or a signature from elsewhere is refused like a thinking block's:
  preserved-thinking page).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from thoughtline.testing import anthropic_blocks as blocks
from thoughtline.testing.anthropic_rules import Rejection, error, version

BETA = "compact-2026-09-04"
_EMPTY = blocks.Prefix(system="", tools="", messages="")


#: The compaction page's list (its supportedModels; compaction-keep-recent-turns): "Fable/Mythos
#: 5.x, Opus 5/5.5, Sonnet 5/5.5, Haiku 5.5, Opus 4.6–4.8, Sonnet 4.6" (a whole major as
#: "family-major", one version as "family-major-minor").
LISTED = frozenset({"fable-5", "mythos-5", "opus-5-0", "opus-5-5", "sonnet-5-0", "sonnet-5-5",
                    "haiku-5-5", "opus-4-6", "opus-4-7", "opus-4-8", "sonnet-4-6"})


def supports(model: str) -> bool:
    """Whether the compaction page lists ``model`` for on-demand compaction (read from the document
    here, not from the codec: the emulator judges the codec's requests, so it shares none of its
    rules)."""
    found = version(model)
    if found is None:
        return False
    family, major, minor = found
    return f"{family}-{major}" in LISTED or f"{family}-{major}-{minor}" in LISTED


def asked(body: Mapping[str, Any]) -> bool:
    return "compaction" in body


def check(body: Mapping[str, Any], headers: Mapping[str, str], model: str) -> Rejection | None:
    """Why a request asking for on-demand compaction is refused (None: it is not)."""
    if not asked(body):
        return None
    if BETA not in headers.get("anthropic-beta", ""):
        return error(f"compaction: That setting requires the `{BETA}` value in the "
                     "`anthropic-beta` header.")
    if not supports(model):
        return error(f"compaction: on-demand compaction is not supported for model {model}")
    return None


def check_replayed(body: Mapping[str, Any], signer: blocks.BlockSigner,
                   account: str) -> Rejection | None:
    """A replayed ``compaction`` block must be in an assistant turn, unchanged and ours."""
    for m, message in enumerate(body.get("messages") or []):
        content = message.get("content") if isinstance(message, Mapping) else None
        if not isinstance(content, list):
            continue
        for b, block in enumerate(content):
            if not isinstance(block, Mapping) or block.get("type") != "compaction":
                continue
            path = f"messages.{m}.content.{b}"
            if message.get("role") != "assistant":
                return error(f"{path}: compaction blocks are only allowed in assistant messages")
            record = signer.read(block.get("signature"))
            if (record is None or record.get("t") != blocks.digest(block.get("content", ""))
                    or record.get("a") != account):
                return error(f"{path}: Invalid `signature` in `compaction` block")
    return None


def compact(body: Mapping[str, Any], model: str, account: str,
            signer: blocks.BlockSigner) -> list[dict[str, Any]]:
    """The answer's content: one signed ``compaction`` block summarizing the messages."""
    summary = f"Compacted summary of {len(body.get('messages') or [])} messages: " + " | ".join(
        _said(body.get("messages") or []))
    signature = signer.issue(model=model, account=account, text=summary, prefix=_EMPTY,
                             previous="")
    return [{"type": "compaction", "content": summary, "signature": signature}]


def _said(messages: Sequence[Any]) -> list[str]:
    out = []
    for message in messages:
        content = message.get("content") if isinstance(message, Mapping) else None
        blocks_ = [content] if isinstance(content, str) else content or []
        for block in blocks_:
            text = block if isinstance(block, str) else (
                block.get("text") or block.get("content") if isinstance(block, Mapping) else "")
            if isinstance(text, str) and text:
                out.append(text[:40])
    return out[-6:]
