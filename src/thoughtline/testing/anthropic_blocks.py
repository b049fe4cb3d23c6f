"""Signed thinking for the Anthropic emulator: issuing blocks bound to their prefix, and the
checks a replayed block must pass (platform.claude.com/docs/en/build-with-claude/preserved-thinking
and its prefix-checks page).

A signature (and a redacted block's ``data``) is ``Eo`` + base64 of a small JSON record and an
HMAC-SHA256 tag over it, keyed by the emulators' shared secret (``signing.DEFAULT_SECRET``), so a
restarted emulator still verifies earlier blocks. The record names what the block is bound to:
the model that made it, the account, a digest of its text, digests of the prefix — top-level
``system``, ``tools`` and the earlier messages with thinking left out — and of the block that
preceded it when it was made. ``signing.Signer`` binds a value to one text only; block binding
needs these fields back to name *which* check failed, hence this richer record.

Checks, in order, with the real wordings: a thinking block without a ``signature`` → "Field
required"; a value that does not verify, or whose text changed → "Invalid `signature` in
`thinking` block" / "Invalid 'data' in 'redacted_thinking' block"; made by a model the target
cannot read → 400 on older models, silently dropped (reported) on models that bind blocks;
bound to another account (Sonnet/Haiku 5.5) → dropped; on binding models, a changed prefix or a
missing predecessor → 400 "bound to a different conversation", or, with ``drop_block``, the block
and every later one dropped and reported in ``input_transformations``. Removing blocks from the
start is fine (preserved-thinking page): the first replayed block's predecessor is not checked.
After a ``fallback`` block the thinking is a chain of its own (anthropic-sdk-python
beta_fallback_block_param): its first block has no predecessor, so a turn sent back without the
block fails the predecessor check.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson

from thoughtline.testing import anthropic_rules as rules
from thoughtline.testing.anthropic_rules import Rejection, error
from thoughtline.testing.signing import DEFAULT_SECRET

_PREFIX = "Eo"
_TAG = 32
_BLOCKS = ("thinking", "redacted_thinking")
_FALLBACK = "fallback"
THINKING_TEXT = "thinking"


def _digest(value: Any) -> str:
    return hashlib.sha256(orjson.dumps(value, option=orjson.OPT_SORT_KEYS)).hexdigest()[:24]


def digest(value: Any) -> str:
    """The digest a signature record holds of its block's text (for other signed blocks)."""
    return _digest(value)


def _system(system: Any) -> list[str]:
    if isinstance(system, str):
        return [system]
    if isinstance(system, list):
        return [b.get("text", "") for b in system if isinstance(b, Mapping)]
    return []


def _visible(content: Any) -> list[Any]:
    """Blocks as the prefix sees them: no thinking, no cache breakpoints. Claude Code moves its
    ``cache_control`` marks to the newest blocks on every request (tests/fixtures/clients) and
    keeps its thinking valid, so a moved breakpoint is no change of the prefix."""
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if not isinstance(content, list):
        return []
    return [{k: v for k, v in b.items() if k != "cache_control"} if isinstance(b, Mapping) else b
            for b in content if not (isinstance(b, Mapping) and b.get("type") in _BLOCKS)]


@dataclass(frozen=True, slots=True)
class Prefix:
    """Digests of what a block at ``messages[index].content[position]`` is bound to."""

    system: str
    tools: str
    messages: str

    @classmethod
    def of(cls, body: Mapping[str, Any], messages: Sequence[Any], index: int,
           content: Sequence[Any], position: int) -> Prefix:
        earlier = [{"role": m.get("role"), "content": _visible(m.get("content"))}
                   for m in messages[:index] if isinstance(m, Mapping)]
        earlier.append({"role": "assistant", "content": _visible(list(content[:position]))})
        return cls(system=_digest(_system(body.get("system"))), tools=_digest(
            body.get("tools") or []), messages=_digest(earlier))

    def differs(self, other: Mapping[str, Any]) -> str:
        """The cause sentence for the first part of the prefix that changed ("" when none)."""
        if other.get("s") != self.system:
            return "The `system` prompt differs from the one this block was created with."
        if other.get("o") != self.tools:
            return "The `tools` differ from the ones this block was created with."
        if other.get("p") != self.messages:
            return "The messages before this block differ from the ones it was created with."
        return ""


class BlockSigner:
    """Issues and verifies the emulator's thinking signatures and redacted data."""

    def __init__(self, secret: bytes = DEFAULT_SECRET) -> None:
        self._secret = secret

    def _mac(self, data: bytes) -> bytes:
        return hmac.new(self._secret + b"/anthropic-blocks", data, hashlib.sha256).digest()

    def issue(self, *, model: str, account: str, text: str, prefix: Prefix,
              previous: str, redacted: bool = False) -> str:
        record = {"m": rules.model_key(model), "a": account, "t": _digest(text),
                  "s": prefix.system, "o": prefix.tools, "p": prefix.messages,
                  "v": _digest(previous) if previous else "", "r": redacted}
        payload = orjson.dumps(record)
        return _PREFIX + base64.b64encode(payload + self._mac(payload)).decode("ascii")

    def read(self, value: object) -> dict[str, Any] | None:
        """The record of a value this signer issued, or None (tampered, foreign, not ours)."""
        if not isinstance(value, str) or not value.startswith(_PREFIX):
            return None
        try:
            blob = base64.b64decode(value[len(_PREFIX):].encode("ascii"), validate=True)
        except (binascii.Error, UnicodeEncodeError, ValueError):
            return None
        payload, tag = blob[:-_TAG], blob[-_TAG:]
        if len(blob) <= _TAG or not hmac.compare_digest(tag, self._mac(payload)):
            return None
        try:
            record = orjson.loads(payload)
        except orjson.JSONDecodeError:
            return None
        return record if isinstance(record, dict) else None


@dataclass(slots=True)
class Verdict:
    """What the emulator makes of the replayed blocks of one request."""

    rejection: Rejection | None = None
    dropped: list[dict[str, str]] = field(default_factory=list)
    last_kept: str = ""  # the last replayed block that survived (a new block's predecessor)


@dataclass(frozen=True, slots=True)
class Target:
    model: str
    account: str
    behavior: str | None  # thinking.block_binding.prefix_mismatch_behavior, if sent
    claude_api: bool


def _invalid(path: str, kind: str) -> Rejection:
    if kind == "redacted_thinking":
        return error(f"{path}: Invalid 'data' in 'redacted_thinking' block")
    return error(f"{path}: Invalid `signature` in `thinking` block")


def _bound_elsewhere(path: str, cause: str, behavior: str | None) -> Rejection:
    text = (f"{path}: Invalid `signature` in `thinking` block. The block is bound to a different "
            "conversation. Remove the block, or set `thinking.block_binding."
            "prefix_mismatch_behavior` to \"drop_block\".")
    return error(f"{text} {cause}" if cause else text)


_PREDECESSOR_MISSING = ("The `thinking` block that preceded this one when it was created is "
                        "missing from this request.")


@dataclass(frozen=True, slots=True)
class _Place:
    """One replayed block and where it sits."""

    path: str
    kind: str
    value: Any
    index: int
    position: int
    rooted: bool = False  # the first thinking block after a ``fallback`` block: a new chain


def _replayed(messages: Sequence[Any]) -> Iterator[tuple[_Place, Mapping[str, Any], bool]]:
    """Every thinking block of every assistant message, and whether it opens its message."""
    for index, message in enumerate(messages):
        if not isinstance(message, Mapping) or message.get("role") != "assistant":
            continue
        content = message.get("content")
        first = True
        rooted = False
        for position, block in enumerate(content if isinstance(content, list) else ()):
            if isinstance(block, Mapping) and block.get("type") == _FALLBACK:
                first = rooted = True
            elif isinstance(block, Mapping) and block.get("type") in _BLOCKS:
                kind = block["type"]
                value = block.get("signature") if kind == "thinking" else block.get("data")
                yield (_Place(f"messages.{index}.content.{position}", kind, value, index,
                              position, rooted), block, first)
                first = rooted = False


def verify(body: Mapping[str, Any], signer: BlockSigner, target: Target) -> Verdict:
    """Check every replayed thinking block of ``body`` against ``target``."""
    out = Verdict()
    messages = body.get("messages") or []
    cut = False
    previous_here = ""
    for place, block, opens in _replayed(messages):
        previous_here = "" if opens else previous_here
        if place.kind == "thinking" and "signature" not in block:
            out.rejection = error(f"{place.path}.thinking.signature: Field required")
            return out
        record = signer.read(place.value)
        text = block.get(THINKING_TEXT, "") if place.kind == "thinking" else ""
        if record is None or record.get("t") != _digest(text) or record.get("r") != (
                place.kind == "redacted_thinking"):
            out.rejection = _invalid(place.path, place.kind)
            return out
        reason = "prefix_binding_mismatch" if cut else _check(
            body, messages, place, record, target, out, previous_here)
        if out.rejection is not None:
            return out
        if reason:
            out.dropped.append({"type": "thinking_dropped", "path": place.path,
                                "reason": reason})
            cut = cut or reason == "prefix_binding_mismatch"
            continue
        previous_here = out.last_kept = place.value
    return out


def _check(body: Mapping[str, Any], messages: Sequence[Any], place: _Place,
           record: Mapping[str, Any], target: Target, out: Verdict, previous_here: str) -> str:
    """Why a genuine block is dropped ("" when kept); sets ``out.rejection`` for a 400."""
    binds = rules.binds(target.model)
    if not rules.reads(target.model, record["m"], claude_api=target.claude_api):
        if not binds:  # older models: a block from another model fails the signature check
            out.rejection = _invalid(place.path, place.kind)
            return ""
        return "model_binding_mismatch"
    if rules.account_bound(record["m"]) and record["a"] != target.account:
        return "account_binding_mismatch"
    expected = previous_here or (out.last_kept if binds and not place.rooted else "")
    if expected and record["v"] != _digest(expected):
        if not binds:  # reordered inside one message
            out.rejection = _invalid(place.path, place.kind)
            return ""
        return _bound(out, place.path, _PREDECESSOR_MISSING, target.behavior)
    if binds:
        content = messages[place.index]["content"]
        cause = Prefix.of(body, messages, place.index, content, place.position).differs(record)
        if cause:
            return _bound(out, place.path, cause, target.behavior)
    return ""


def _bound(out: Verdict, path: str, cause: str, behavior: str | None) -> str:
    if behavior == "drop_block":
        return "prefix_binding_mismatch"
    # Enforced by default for accounts created from 2026-08-31 (preserved-thinking prefix-checks
    # page): the emulator is one.
    out.rejection = _bound_elsewhere(path, cause, behavior)
    return ""


def missing_in_loop(body: Mapping[str, Any], model: str) -> Rejection | None:
    """The current tool loop's assistant turn must start with its thinking
    (docs.anthropic.com/en/docs/build-with-claude/extended-thinking)."""
    if not rules.thinking_enabled(body, model):
        return None
    messages = body.get("messages") or []
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if not isinstance(message, Mapping):
            continue
        content = message.get("content")
        blocks = content if isinstance(content, list) else []
        if message.get("role") == "user":
            if any(isinstance(b, Mapping) and b.get("type") != "tool_result" for b in blocks) or (
                    isinstance(content, str)):
                return None  # the loop starts after this user turn
            continue
        uses = [b for b in blocks if isinstance(b, Mapping) and b.get("type") == "tool_use"]
        first = blocks[0].get("type") if blocks and isinstance(blocks[0], Mapping) else "text"
        if uses and first not in _BLOCKS:
            return error(f"messages.{index}.content.0.type: Expected `thinking` or "
                         f"`redacted_thinking`, but found `{first}`. When `thinking` is enabled, "
                         "a final `assistant` message must start with a thinking block "
                         "(preceeding the lastmost set of `tool_use` and `tool_result` blocks). "
                         "We recommend you include thinking blocks from previous turns. To avoid "
                         "this requirement, disable `thinking`.")
    return None
