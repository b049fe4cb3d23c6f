"""Encode a request for an Anthropic-format route: the replay policy applied block by block.

The policy (one table, README "Anthropic"; facts provider-contracts §5, provider-updates §1a):

- the current tool loop is always replayed verbatim; earlier turns keep their thinking when the
  target model keeps prior thinking (``models.keeps_prior_thinking``), else only the last
  assistant turn keeps it;
- a signed or redacted block goes only where the profile's scope accepts its origin, never when
  its fingerprint was rejected, never when it is incomplete (cut before its signature);
- on a model that binds blocks to their prefix, once a block has gone out, a rejected block after
  it invalidates every block after it (§5), so the rest of that chain is left out too;
- **what replaces reasoning that cannot go signed: nothing.** The block is omitted. Thinking is
  never transcribed into text the model would read as its own words and imitate, and never sent
  unsigned to a route that checks signatures. Only routes documented to take unsigned thinking
  (DeepSeek, Kimi) get the stored text as an unsigned ``thinking`` block.

The encoder records where each wire block came from (``Index``), so a 400 naming
``messages.N.content.M`` maps back to the canonical part. Stored history is never mutated: the
body shares frozen values and cached wire turns; serialize it, never edit it. The turn by turn
rules are ``walk``'s; a resumed history that was not decoded is spliced from its stored wire
forms (``forms``) when every form fits the request, else decoded and walked here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from thoughtline.codecs.anthropic import binding, forms, models, params
from thoughtline.codecs.anthropic.profile import AnthropicProfile
from thoughtline.codecs.anthropic.walk import (
    Chain,
    Counts,
    Rules,
    Turn,
    Walk,
    WireCache,
    keeps_prior,
    part_fingerprint,
    step,
    system_blocks,
    target_model,
)
from thoughtline.codecs.anthropic.wire import API, NS, SETTING_MISMATCH
from thoughtline.codecs.common import merge_params
from thoughtline.messages import Message, ToolSpec
from thoughtline.replay import ReplayPlan, loop_start

__all__ = ["Index", "WireCache", "encode_messages", "encode_request", "encode_tools",
           "part_fingerprint", "wire_summary"]

Location = tuple[int, int]  # (wire message index, block index) = ``messages.N.content.M``


@dataclass(frozen=True, kw_only=True, slots=True)
class Index:
    """Wire block → canonical (history index, part index), and the fingerprint of thinking ones.

    Kept per wire message (one entry per message, the turns' own tuples shared with the cache);
    the per-block maps are derived when a rejection or the request log asks. A request spliced
    from stored wire forms has ``counts`` (its stored turns' blocks per kind) and no wire
    locations: reading a rejection of it needs the ordinary index of the decoded history.
    """

    turns: tuple[tuple[int, Turn], ...] = ()
    #: Thinking blocks left out of this request (scope, rejection, incomplete, earlier turns).
    omitted: int = 0
    #: Binding models: the digest of this request's whole prefix (the stamp of its answer), and
    #: how many stored turns were stamped under another prefix (their blocks left out).
    prefix: str = ""
    stale: int = 0
    counts: Counts | None = None

    @property
    def spliced(self) -> bool:
        return self.counts is not None

    @property
    def parts(self) -> dict[Location, tuple[int, int]]:
        self._located()
        return {(n, m): (history, position) for n, (history, turn) in enumerate(self.turns)
                for m, position in enumerate(turn.parts)}

    @property
    def fingerprints(self) -> dict[Location, str]:
        self._located()
        return {(n, m): part_fingerprint(part) for n, (_, turn) in enumerate(self.turns)
                for m, part in enumerate(turn.reasoning) if part is not None}

    @property
    def sent(self) -> dict[str, int]:
        counts = dict(self.counts.get()[0]) if self.counts is not None else {}
        for _, turn in self.turns:
            for block in turn.blocks:
                kind = block["type"]
                counts[kind] = counts.get(kind, 0) + 1
        return counts

    @property
    def left_out(self) -> int:
        """Thinking blocks left out, spliced turns' included."""
        return self.omitted + (self.counts.get()[1] if self.counts is not None else 0)

    def _located(self) -> None:
        if self.spliced:
            raise ValueError("a spliced request has no wire locations: index the decoded "
                             "history's request instead")


def _last_assistant(history: Sequence[Message]) -> int:
    for index in range(len(history) - 1, -1, -1):
        if history[index].role == "assistant":
            return index
    return -1


def encode_messages(history: Sequence[Message], plan: ReplayPlan, model: str,
                    cache: WireCache | None = None, tools: Sequence[Any] = (),
                    behavior: str | None = None) -> tuple[list[Any], list[Any], Index]:
    """The ``system`` blocks, the ``messages`` list and the index for ``history`` under ``plan``.

    On a binding model, a turn stamped under another prefix has its blocks left out — they could
    only fail the prefix check — unless the session lets the API drop them (``drop_block``), which
    it then reports.
    """
    target = target_model(plan, model)
    keep_prior = keeps_prior(target)
    binds = models.binds_blocks(target)
    memo = cache if cache is not None else WireCache()
    entries = memo.for_plan(plan.key)
    context = (target, behavior, orjson.dumps(tools))
    base = getattr(history, "base", history)
    if not getattr(base, "decoded", True):
        spliced = forms.splice(history, base, plan, memo, context=context, tools=tools)
        if spliced is not None:
            return spliced.system, spliced.messages, _index(spliced, binds)
    rules = Rules(plan=plan, loop=loop_start(history), last=_last_assistant(history),
                  keep_prior=keep_prior, binds=binds, behavior=behavior)
    # Continuing the last walk is exact only when an earlier turn's wire form cannot depend on
    # where the history now ends: every turn keeps its thinking, and no system message was added.
    walk = memo.resume(history, context) if keep_prior else None
    if walk is not None and any(m.role == "system" for m in history[len(walk.history):]):
        walk = None
    if walk is None:
        walk = Walk(context=context, chain=Chain(binds=binds), system=system_blocks(history))
        walk.running = binding.seed(walk.system, tools) if binds else b""
    for index in range(len(walk.history), len(history)):
        step(walk, index, history[index], rules, memo, entries)
    walk.history = list(history)
    if cache is not None and keep_prior:
        cache.remember(walk)
    return walk.system, walk.messages, _index(walk, binds)


def _index(walk: Walk, binds: bool) -> Index:
    return Index(turns=tuple(walk.turns), omitted=walk.omitted, stale=walk.stale,
                 prefix=walk.running.hex() if binds else "", counts=walk.counts)


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


#: The body fields encode_request writes itself: a param naming one is left out (``thinking``
#: and ``max_tokens`` are read as parameters by ``params`` and never merged raw).
OWNED = frozenset({"anthropic_version", "model", "system", "messages", "tools", "stream",
                   "output_config.effort"})


def encode_request(history: Sequence[Message], plan: ReplayPlan, *, model: str,
                   tools: Sequence[ToolSpec] = (), params_: Mapping[str, Any] | None = None,
                   settings: Mapping[str, Any] | None = None, stream: bool = False,
                   cache: WireCache | None = None) -> tuple[dict[str, Any], Index]:
    """The request body for ``history`` on a route, shaped by ``plan``, and its index map."""
    profile: AnthropicProfile = plan.profile
    given = dict(params_ or {})
    merged = {**(settings or {}), **plan.settings}
    wire_tools = encode_tools(tools) if tools else []
    system, messages, index = encode_messages(history, plan, model, cache, wire_tools,
                                              merged.get(SETTING_MISMATCH,
                                                         given.get(SETTING_MISMATCH)))
    body: dict[str, Any] = {}
    if profile.body_version:
        body["anthropic_version"] = profile.body_version
    if not profile.model_in_url:
        body["model"] = model
    body.update(params.thinking_fields(target_model(plan, model), given, merged))
    if system:
        body["system"] = system
    body["messages"] = messages
    if wire_tools:
        body["tools"] = wire_tools
    if stream:
        body["stream"] = True
    merge_params(body, params.passthrough(given), OWNED)
    return body, index


def wire_summary(index: Index | None) -> dict[str, Any]:
    """What the request log records: blocks sent per kind, thinking blocks left out."""
    if index is None:
        return {"api": API, "blocks": {}, "thinking_omitted": 0}
    out = {"api": API, "blocks": dict(sorted(index.sent.items())),
           "thinking_omitted": index.left_out}
    if index.stale:
        out["stale_turns"] = index.stale  # stamped under another prefix: blocks left out
    return out
