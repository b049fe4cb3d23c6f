"""Server-side fallback in the Anthropic emulator, from the documented shapes.

Rules, each with its source (anthropic-sdk-python 2.17 beta types, src/anthropic/types/beta/:
``beta_fallbacks_param``, ``beta_fallback_block``, ``beta_fallback_block_param``):
- A ``fallbacks`` parameter (a list of ``{"model": …}`` entries, or ``"default"``) asks for
  server-side fallback; it needs the beta ``server-side-fallback-2026-06-01`` or ``-07-01``
  (Claude Code 2.1.337 ships both), else a 400 naming it (the API's usual wording for a
  beta-gated setting, as ``thinking.block_binding``'s: preserved-thinking page).
- When the requested model declines for policy reasons the first ``fallbacks`` entry answers:
  the content holds what the declining model made, then one ``fallback`` block (``from``: the
  model string the caller sent; ``to``: the fallback's id; ``trigger``: ``{"type": "refusal",
  "category": …}``), then the fallback model's output; the response's ``model`` is the fallback
  model. Whether a model declines is the test's to say (``AnthropicEmulator.decline_next``).
- The thinking after a ``fallback`` block starts a chain of its own, made by the fallback model
  ("the thinking before and after it carry independently rooted chains": the fallback block's
  docstring): the replay check roots it anew there (``anthropic_blocks``), so a turn sent back
  without the block — two chains merged into one span — is refused, as the block param's docstring
  says the API does.
- Streamed, the block arrives whole in ``content_block_start`` and has no deltas (block doc).
- Stricter than the API, which accepts the block unvalidated: a ``fallback`` block sent back must
  be in an assistant message and byte for byte one this emulator issued (its JSON as issued —
  key order and values — found in the request as sent), so a relay that rebuilt, reordered or
  moved it into another turn is caught.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import orjson

from thoughtline.testing.anthropic_rules import Rejection, error

BETAS = ("server-side-fallback-2026-06-01", "server-side-fallback-2026-07-01")
PARAM = "fallbacks"
BLOCK = "fallback"
#: The model "default" falls back to here (the server-defined configuration is not documented).
DEFAULT_TO = "claude-opus-5"


@dataclass(frozen=True, slots=True)
class Hop:
    """One fallback: the model that declined (as the caller named it), the one that answers,
    and the refusal category."""

    source: str
    to: str
    category: str | None

    def block(self) -> dict[str, Any]:
        return {"type": BLOCK, "from": {"model": self.source}, "to": {"model": self.to},
                "trigger": {"type": "refusal", "category": self.category}}


def asked(body: Mapping[str, Any], headers: Mapping[str, str]) -> bool:
    """Does the request ask for server-side fallback (the parameter and one of its betas)?"""
    return PARAM in body and any(b in headers.get("anthropic-beta", "") for b in BETAS)


def check(body: Mapping[str, Any], headers: Mapping[str, str]) -> Rejection | None:
    """Why a request naming ``fallbacks`` is refused (None: it is not)."""
    if PARAM not in body:
        return None
    if not any(b in headers.get("anthropic-beta", "") for b in BETAS):
        return error(f"{PARAM}: That setting requires the `{BETAS[-1]}` value in the "
                     "`anthropic-beta` header.")
    chain = body[PARAM]
    if chain == "default":
        return None
    if not isinstance(chain, list) or not chain or not all(
            isinstance(e, Mapping) and isinstance(e.get("model"), str) for e in chain):
        return error(f"{PARAM}: Input should be 'default' or a list of objects with a `model`")
    return None


def hop(body: Mapping[str, Any], model: str, category: str | None) -> Hop:
    """The hop a decline of ``model`` makes: to the first ``fallbacks`` entry."""
    chain = body.get(PARAM)
    to = chain[0]["model"] if isinstance(chain, list) else DEFAULT_TO
    source = given if isinstance(given := body.get("model"), str) else model
    return Hop(source=source, to=to, category=category)


def check_replayed(body: Mapping[str, Any], raw: bytes,
                   issued: set[bytes]) -> Rejection | None:
    """Every ``fallback`` block sent back is in an assistant message and is, byte for byte,
    one this emulator issued."""
    for m, message in enumerate(body.get("messages") or []):
        content = message.get("content") if isinstance(message, Mapping) else None
        for b, block in enumerate(content if isinstance(content, list) else ()):
            if not isinstance(block, Mapping) or block.get("type") != BLOCK:
                continue
            path = f"messages.{m}.content.{b}"
            if message.get("role") != "assistant":
                return error(f"{path}: fallback blocks are only allowed in assistant messages")
            sent = orjson.dumps(block)
            if sent not in issued or sent not in raw:
                return error(f"{path}: the `fallback` block is not one this API returned "
                             "(emulator check: it must go back exactly as received)")
    return None
