"""Encode a request for an Anthropic-format route: the replay policy applied block by block.

The policy (one table, docs/providers.md "Anthropic"; facts:
docs.anthropic.com/en/docs/build-with-claude/extended-thinking,
platform.claude.com/docs/en/build-with-claude/preserved-thinking):

- the current tool loop is always replayed verbatim; earlier turns keep their thinking when the
  target model keeps prior thinking (``models.keeps_prior_thinking``), else only the last
  assistant turn keeps it;
- a signed or redacted block goes only where the profile's scope accepts its origin, never when
  its fingerprint was rejected, never when it is incomplete (cut before its signature);
- on a model that binds blocks to their prefix, once a block has gone out, a rejected block after
  it invalidates every block after it (preserved-thinking page), so the rest of that chain is left
  out too;
- **what replaces reasoning that cannot go signed: nothing.** The block is omitted. Thinking is
  never transcribed into text the model would read as its own words and imitate, and never sent
  unsigned to a route that checks signatures. Only routes documented to take unsigned thinking
  (DeepSeek, Kimi) get the stored text as an unsigned ``thinking`` block.

The rules are ``walk``'s; ``turns`` encodes a history turn by turn with them (the core's wire
cache stores and splices each turn's bytes). Here: the request body around the turns' bytes, and
the ``Index`` of the request as sent — where each wire block came from and the fingerprint of each
thinking block, so a 400 naming ``messages.N.content.M`` maps back to the canonical part without
rebuilding anything; the blocks per kind and the thinking left out, for the request log.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import orjson

from thoughtline.codecs.anthropic import params
from thoughtline.codecs.anthropic.profile import AnthropicProfile
from thoughtline.codecs.anthropic.walk import block_fingerprint, target_model
from thoughtline.codecs.anthropic.wire import API, NS, TOOLS_AS_SENT
from thoughtline.codecs.base import Encoded, RequestSpec, Walk, profile_of
from thoughtline.codecs.common import merge_params
from thoughtline.messages import ToolSpec
from thoughtline.replay import ReplayPlan

if TYPE_CHECKING:
    from thoughtline.codecs.anthropic.sent import State, TurnAfter

Location = tuple[int, int]  # (wire message index, block index) = ``messages.N.content.M``

#: The body fields ``request`` writes itself: a param naming one is left out (``thinking``
#: and ``max_tokens`` are read as parameters by ``params`` and never merged raw).
OWNED = frozenset({"anthropic_version", "model", "system", "messages", "tools", "stream",
                   "output_config.effort"})


def encode_tools(tools: Sequence[ToolSpec]) -> list[Any]:
    out: list[Any] = []
    for tool in tools:
        given = tool.native.get(NS)
        if isinstance(given, Mapping) and given.get("name") == tool.name:
            out.append(given)  # an Anthropic client's own definition, as it sent it
            continue
        wire: dict[str, Any] = {"name": tool.name, "input_schema": tool.parameters}
        if tool.description:
            wire["description"] = tool.description
        out.append(wire)
    return out


def top_tools(spec: RequestSpec) -> list[Any]:
    """The top-level ``tools``: an Anthropic client's own list as it sent it, when the Messages
    face passed it on (``TOOLS_AS_SENT``: server tools included, and never the tools its
    ``tool_addition`` blocks add, which those blocks carry in place: beta types); else built from
    the canonical tools."""
    given = spec.params.get(TOOLS_AS_SENT)
    return given if isinstance(given, list) else encode_tools(spec.tools)


def system_json(system: Sequence[str]) -> bytes:
    """The ``system`` array from each top-level system message's blocks (comma-joined JSON)."""
    return b"[" + ",".join(s for s in system if s).encode() + b"]"


def request(walk: Walk[State, TurnAfter], spec: RequestSpec, plan: ReplayPlan) -> Encoded:
    """The request body around the turns' bytes, serialized, with its index."""
    profile = profile_of(plan, AnthropicProfile)
    given = {k: v for k, v in spec.params.items() if k != TOOLS_AS_SENT}
    merged = {**spec.settings, **plan.settings}
    body: dict[str, Any] = {}
    if profile.body_version:
        body["anthropic_version"] = profile.body_version
    if not profile.model_in_url:
        body["model"] = spec.model
    body.update(params.thinking_fields(target_model(plan, spec.model), given, merged))
    if any(walk.state.system):
        body["system"] = orjson.Fragment(system_json(walk.state.system))
    body["messages"] = walk.fragments
    tools = top_tools(spec)
    if tools:
        body["tools"] = tools
    if spec.stream:
        body["stream"] = True
    merge_params(body, params.passthrough(given), OWNED)
    return Encoded(raw=orjson.dumps(body), index=Index(walk=walk))


@dataclass(frozen=True, slots=True)
class Index:
    """A request as sent, turn by turn (``sent.TurnAfter``): wire block → canonical (history
    index, part index), the fingerprint of each thinking block, blocks per kind, prefix digest."""

    walk: Walk[State, TurnAfter]

    def _sent(self) -> list[tuple[int, TurnAfter]]:
        """(history index, after) of each turn that went into ``messages``, in order."""
        walk = self.walk
        return [(i, after) for i, (data, after) in enumerate(zip(walk.turns, walk.afters,
                                                                 strict=True)) if data]

    @property
    def parts(self) -> dict[Location, tuple[int, int]]:
        return {(n, m): (i, part) for n, (i, after) in enumerate(self._sent())
                for m, part in enumerate(after.parts)}

    @property
    def fingerprints(self) -> dict[Location, str]:
        """The fingerprint of each block made from a thinking part (``walk.part_fingerprint``):
        read from the block as sent (only a rejection asks), or kept in the after facts where
        the block does not carry what it hashes."""
        turns = self.walk.turns
        out: dict[Location, str] = {}
        for n, (i, after) in enumerate(self._sent()):
            if after.reasoning:
                sent = orjson.loads(turns[i])
                content = sent.get("content") if isinstance(sent, dict) else None
                blocks = content if isinstance(content, list) else []
                for m in after.reasoning:
                    # (a stored form's after facts are trusted as far as its digest goes: a
                    # position its bytes lack names no block, and teaches nothing)
                    if 0 <= m < len(blocks) and isinstance(blocks[m], dict):
                        out[(n, m)] = block_fingerprint(blocks[m])
            for m, fp in after.thinking:
                out[(n, m)] = fp
        return out

    @property
    def sent(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for after in self.walk.afters:
            for kind in after.kinds:
                counts[kind] = counts.get(kind, 0) + 1
        return counts

    @property
    def left_out(self) -> int:
        """Thinking blocks left out (scope, rejection, incomplete, earlier turns)."""
        return sum(after.omitted for after in self.walk.afters)

    @property
    def prefix(self) -> str:
        """Binding models: the digest of this request's whole prefix (its answer's stamp)."""
        state = self.walk.state
        return state.running.hex() if state.binds else ""

    @property
    def stale(self) -> int:
        """Stored turns stamped under another prefix (their thinking left out)."""
        return self.walk.state.stale


def wire_summary(index: Index | None) -> dict[str, Any]:
    """What the request log records: blocks sent per kind, thinking blocks left out."""
    if index is None:
        return {"api": API, "blocks": {}, "thinking_omitted": 0}
    out = {"api": API, "blocks": dict(sorted(index.sent.items())),
           "thinking_omitted": index.left_out}
    if index.stale:
        out["stale_turns"] = index.stale  # stamped under another prefix: blocks left out
    return out
