"""The pure core of compaction: settings, checkpoints, cut rules, the tail walk, salvage.

See ``thoughtline.compaction`` for what compaction keeps and why; ``sessions`` applies this core
to a stored session. Nothing here does I/O beyond reading config.
"""

from __future__ import annotations

import tomllib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol

from thoughtline import config as config_mod
from thoughtline import replay
from thoughtline.codecs import registry
from thoughtline.codecs.base import Codec
from thoughtline.errors import ConfigError
from thoughtline.estimate import (
    Estimator,
    context_window,
    model_facts,
    text_tokens,
)
from thoughtline.messages import Message, Opaque, Text, ToolResult
from thoughtline.messages import system as system_message
from thoughtline.messages import user as user_message
from thoughtline.routes.resolve import Route

NAMESPACE = "thoughtline"
CHECKPOINT_HEADER = "[Summary of the earlier part of this conversation, made when it was compacted]"
PRUNED = "[tool result pruned by compaction: {n} characters]"
#: Between the head and the end of a bulky tool output a compaction shortened.
TRIMMED = "\n[… {n} characters of this tool output left out by compaction …]\n"
TRUNCATED = "\n[… summary truncated by compaction]"
_KEEP_RESULTS = 2  # newest tool results salvage never prunes
_TRIM_FLOOR = 2000  # characters a shortened tool output keeps at least (head and end)

#: The window assumed when neither ``context_window`` nor ``config/models.toml`` knows the
#: model's: the smallest of the known windows (DeepSeek, gpt-oss, Qwen3, Mistral: 128K).
DEFAULT_WINDOW = 131_072
#: The retained tail, when no message count is asked for, costs at most this share of the
#: window (leaving the rest for the summary, the system prompt, tools and the turns to come) …
TAIL_SHARE = 0.25
#: … and at most this share of what the conversation costs now: a client compacts because its
#: conversation crossed a limit of its own (at most the size it is leaving), so the tail must
#: land well below it, or every answer crosses it again.
TAIL_OF_BEFORE = 0.5
_TRANSCRIPT_ITEM = 4000  # characters of one head item shown to the summarizer

SUMMARY_SYSTEM = ("You compact conversations. Write a faithful, dense summary of the conversation "
                  "you are given, for the same assistant to continue from: the user's goals and "
                  "constraints, decisions made, facts and tool results still needed, open "
                  "questions and the current state of the work. Plain text, no preamble.")


# --- settings -----------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True, slots=True)
class CompactionSettings:
    """``[compaction]`` of ``config.toml`` plus the providers' ``context_window`` overrides."""

    threshold: float = 0.8  # compact before a request above this fraction of the window
    #: Messages kept verbatim at least; None (not configured): the retained tail is bounded by
    #: tokens instead (``tail_budget``).
    keep: int | None = None
    summarizer: str = ""  # "provider/model"; "" = the session's own model
    #: What the compacted history aims at, as a fraction of the threshold budget (room to grow).
    target: float = 0.5
    #: Use the provider's own compaction where the route has it (falling back to ours).
    native: bool = False
    windows: Mapping[str, int] = field(default_factory=dict)  # provider id → context window
    config: config_mod.Config | None = field(default=None, compare=False)

    def window(self, provider: config_mod.ProviderConfig) -> int | None:
        return context_window(provider.model, self.windows.get(provider.id))


def load_settings(home: Path, cfg: config_mod.Config | None = None) -> CompactionSettings:
    """Read ``[compaction]`` and ``context_window`` entries from ``home/config.toml``."""
    path = home / "config.toml"
    raw: Mapping[str, Any] = {}
    if path.exists():
        try:
            raw = tomllib.loads(path.read_text("utf-8"))
        except (OSError, tomllib.TOMLDecodeError) as exc:
            raise ConfigError(f"{path}: {exc}") from exc
    table = raw.get("compaction", {})
    try:
        threshold = float(table.get("threshold", 0.8))
        keep = int(table["keep"]) if "keep" in table else None
        summarizer = str(table.get("summarizer", ""))
        native = table.get("native", False)
        windows = {str(name).lower(): int(entry["context_window"])
                   for name, entry in dict(raw.get("providers", {})).items()
                   if isinstance(entry, Mapping) and "context_window" in entry}
    except (TypeError, ValueError, AttributeError) as exc:
        raise ConfigError(f"{path}: [compaction] / context_window: {exc}") from exc
    if not 0 < threshold <= 1 or (keep or 0) < 0 or any(w <= 0 for w in windows.values()):
        raise ConfigError(f"{path}: [compaction] threshold must be in (0, 1], keep >= 0, "
                          "context_window > 0")
    if not isinstance(native, bool):
        raise ConfigError(f"{path}: [compaction] native must be true or false, not {native!r}")
    if summarizer and "/" not in summarizer:
        raise ConfigError(f"{path}: [compaction] summarizer must be \"provider/model\", "
                          f"not {summarizer!r}")
    return CompactionSettings(threshold=threshold, keep=keep, summarizer=summarizer,
                              native=native, windows=windows,
                              config=cfg or config_mod.load_config(home))


# --- checkpoints and rules ----------------------------------------------------------------------


def checkpoint(summary: str, block: Opaque | None = None, **meta: Any) -> Message:
    """The message that stands for a summarized head. ``block``: the provider's own
    compaction block or item, verbatim, after the summary text; its codec sends it (alone, in
    its place) to a route that may read it, every other route gets the summary text."""
    parts: tuple[Text | Opaque, ...] = (Text(text=f"{CHECKPOINT_HEADER}\n\n{summary}"),)
    return Message(role="user", parts=parts + ((block,) if block is not None else ()),
                   native={NAMESPACE: {"checkpoint": meta}})


def is_checkpoint(message: Message) -> bool:
    own = message.native.get(NAMESPACE)
    return message.role == "user" and isinstance(own, Mapping) and "checkpoint" in own


@dataclass(frozen=True, kw_only=True, slots=True)
class CompactionRules:
    """What one route's model needs from a compaction (defaults from ``config/models.toml``)."""

    whole_exchanges: bool = False  # cut only before a user message (Gemini)
    summarize_reasoning: bool = True  # as a summarizer, may read transcribed thinking
    #: Per-session API settings to store after compacting, by API id.
    after_compaction: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)


def rules_for(codec: Codec, route: Route) -> CompactionRules:
    facts = model_facts(route.model)
    rules = CompactionRules(whole_exchanges=facts.whole_exchanges,
                            summarize_reasoning=facts.summarize_reasoning,
                            after_compaction=facts.after_compaction)
    hook = getattr(codec, "compaction_rules", None)
    return hook(route, rules) if hook is not None else rules


def tail_budget(window: int | None, before: int) -> int:
    """The tokens a retained tail may cost when no message count is asked for: ``TAIL_SHARE``
    of the window (``DEFAULT_WINDOW`` when unknown) and ``TAIL_OF_BEFORE`` of the ``before``
    tokens the conversation costs now, whichever is less."""
    return max(0, min(int((window or DEFAULT_WINDOW) * TAIL_SHARE), int(before * TAIL_OF_BEFORE)))


def _prefix_end(history: Sequence[Message]) -> int:
    index = 0
    while index < len(history) and history[index].role == "system":
        index += 1
    return index


def _results(message: Message) -> bool:
    return message.role == "tool" or any(isinstance(p, ToolResult) for p in message.parts)


def position_critical(part: object) -> bool:
    """An opaque part its own codec says must stay where it is (Responses ``program``,
    ``configuration_update`` and ``compaction`` items, an Anthropic ``compaction`` block):
    a ``position_critical(value)`` hook of the codec whose namespace holds it."""
    if not isinstance(part, Opaque) or part.namespace not in registry.apis():
        return False
    hook = getattr(registry.codec(part.namespace), "position_critical", None)
    return hook is not None and bool(hook(part.native[part.namespace]))


def _pins_only(message: Message) -> bool:
    """A turn of position-critical items only (reasoning aside): no text, no tool call."""
    return (not message.text and not message.tool_calls and not is_checkpoint(message)
            and any(position_critical(p) for p in message.parts))


def _thinking_only(message: Message) -> bool:
    return (message.role == "assistant" and bool(message.reasoning)
            and not message.text and not message.tool_calls)


def cut_points(history: Sequence[Message], pending: Sequence[Message] = (),
               rules: CompactionRules | None = None) -> list[int]:
    """Every index ``c`` where ``history[:c]`` may become a checkpoint and ``history[c:]`` stay.

    The head ``history[start:c]`` (``start`` after the leading system messages) is never empty,
    and the tail starts no later than the user message that opened the current tool loop.
    """
    rules = rules or CompactionRules()
    start = _prefix_end(history)
    whole = [*history, *pending]
    last_user = replay.loop_start(whole) - 1
    if last_user < 0:
        return []
    cuts = []
    for c in range(start + 1, min(last_user, len(history)) + 1):
        after = whole[c] if c < len(whole) else None
        before = history[c - 1]
        if after is not None and (_results(after) or is_checkpoint(after)):
            continue  # a tool call stays with its results
        if before.role == "assistant" and before.tool_calls:
            continue  # ... also when its results never came
        if _thinking_only(before):
            continue  # a thinking block stays with the turn it precedes
        if _pins_only(before):
            # Position-critical items (a configuration_update, a program item, a provider's
            # compaction item: openai-python types/responses, docs/compaction.md) on their own: they
            # belong to the turn they precede, never the last message of a summarized head.
            continue
        if before.role == "system":
            # A turn-scoped system message (Anthropic's in-place role:system with its
            # output_config: docs/claude-code.md) stays in place with the turn it precedes:
            # never the last message of a summarized head, never reworded away from its turn.
            continue
        if rules.whole_exchanges and (after is None or after.role != "user"):
            continue
        cuts.append(c)
    return cuts


# --- the pure core ------------------------------------------------------------------------------


class Summarize(Protocol):
    """Turns the summary prompt into the summary text (the finish reason tells refusals)."""

    async def __call__(self, prompt: Sequence[Message]) -> tuple[str, str | None]: ...


class NativeSummarize(Protocol):
    """The provider's own compaction of a history (``[compaction] native``): its readable
    summary and its block, or None to fall back to the summary prompt."""

    async def __call__(self, history: Sequence[Message]) -> tuple[str, Opaque] | None: ...


@dataclass(frozen=True, kw_only=True, slots=True)
class Outcome:
    """What ``compact_history`` decided; ``messages`` is the new history when ``compacted``."""

    compacted: bool
    messages: tuple[Message, ...]
    tokens_before: int
    tokens_after: int
    reason: str = ""
    cut: int = 0
    #: Head messages the new checkpoint stands for; 0 when nothing was summarized (the tail
    #: was only salvaged) and ``messages`` has no new checkpoint.
    summarized: int = 0
    salvaged: tuple[str, ...] = ()
    dropped_checkpoints: int = 0


def summary_prompt(head: Sequence[Message], *, reasoning: bool,
                   budget: int | None = None) -> list[Message]:
    """The summarizer's request: the head as a transcript. Thinking only when ``reasoning``
    (a Claude summarizer refuses transcribed thinking: visible text only). Over ``budget``
    tokens, the oldest items give way (an earlier summary is always kept)."""
    lines = []
    for message in head:
        if is_checkpoint(message):
            earlier = message.text.removeprefix(CHECKPOINT_HEADER).strip()
            lines.append(f"[summary of what came before]\n{earlier}")
            continue
        if reasoning and message.role == "assistant" and message.reasoning_text():
            lines.append(f"[assistant, thinking]\n{_clip(message.reasoning_text())}")
        if message.text:
            lines.append(f"[{message.role}]\n{_clip(message.text)}")
        lines.extend(f"[assistant calls {c.name}]\n{_clip(c.arguments)}"
                     for c in message.tool_calls)
        lines.extend(f"[tool result{' (error)' if r.is_error else ''}]\n{_clip(r.content)}"
                     for r in message.tool_results)
    body = "\n\n".join(_fit(lines, budget) if budget else lines)
    return [system_message(SUMMARY_SYSTEM),
            user_message(f"Summarize this conversation:\n\n<conversation>\n{body}\n"
                         "</conversation>")]


def _fit(lines: list[str], budget: int) -> list[str]:
    first = lines[:1] if lines and lines[0].startswith("[summary of what came before]") else []
    rest = lines[len(first):]
    spent = sum(text_tokens(line) for line in first)
    kept: list[str] = []
    for line in reversed(rest):
        spent += text_tokens(line)
        if spent > budget and kept:
            break
        kept.append(line)
    dropped = len(rest) - len(kept)
    gap = [f"[… {dropped} earlier items left out to fit the summarizer's context]"] * bool(dropped)
    return [*first, *gap, *reversed(kept)]


def _clip(text: str) -> str:
    if len(text) <= _TRANSCRIPT_ITEM:
        return text
    return text[:_TRANSCRIPT_ITEM] + f" […{len(text) - _TRANSCRIPT_ITEM} more characters]"


def _walk(price: Callable[[int], int], cuts: Sequence[int], budget: int | None) -> int:
    """The smallest cut (longest tail) whose candidate fits ``budget``; the largest cut when
    none fits or no budget is given. Prices fall as the cut moves right (less tail)."""
    if budget is None or price(cuts[-1]) > budget:
        return cuts[-1]
    lo, hi = 0, len(cuts) - 1
    while lo < hi:
        mid = (lo + hi) // 2
        if price(cuts[mid]) <= budget:
            hi = mid
        else:
            lo = mid + 1
    return cuts[lo]


async def _summary(prefix: Sequence[Message], head: Sequence[Message], summarize: Summarize,
                   native: NativeSummarize | None, *, reading: bool,
                   prompt_budget: int | None) -> tuple[str, Opaque | None, bool] | str:
    """The head's summary text, the provider's own block (``native``) and whether the text is
    that provider's signed summary (never capped); or why there is no summary."""
    made = await native([*prefix, *head]) if native is not None else None
    text, block = made if made is not None else ("", None)
    if text.strip():
        return text, block, True
    # ours, or the readable stand-in for an encrypted native item
    text, finish = await summarize(summary_prompt(head, reasoning=reading, budget=prompt_budget))
    if finish == "refusal" or not text.strip():
        why = "refused to summarize" if finish == "refusal" else "returned an empty summary"
        return f"the summarizer {why}; the history is unchanged"
    return text, block, False


def _shorten(tail: Sequence[Message],
             fits: Callable[[Sequence[Message]], bool]) -> tuple[list[Message], bool]:
    """``tail`` with each tool output over some length kept to its head and its end
    (``TRIMMED`` between): the longest length that ``fits``, down to ``_TRIM_FLOOR``
    characters; ``tail`` as it is when it fits already or no output is over the floor."""
    longest = max((len(p.content) for m in tail for p in m.parts if isinstance(p, ToolResult)),
                  default=0)
    if longest <= _TRIM_FLOOR or fits(tail):
        return list(tail), False
    length = longest
    while True:
        length = max(_TRIM_FLOOR, length // 2)
        shortened = [_trimmed(m, length) for m in tail]
        if length == _TRIM_FLOOR or fits(shortened):
            return shortened, True


def _trimmed(message: Message, length: int) -> Message:
    def trim(part: object) -> object:
        if not isinstance(part, ToolResult) or len(part.content) <= length:
            return part
        half = length // 2
        left = len(part.content) - 2 * half
        return replace(part, content=(part.content[:half] + TRIMMED.format(n=left)
                                      + part.content[-half:]))

    parts = tuple(trim(p) for p in message.parts)
    return message if parts == message.parts else replace(message, parts=parts)  # type: ignore[arg-type]


def _prune_results(tail: Sequence[Message]) -> tuple[list[Message], bool]:
    """Old tool results' contents replaced by a marker; the newest ``_KEEP_RESULTS`` kept."""
    seen = 0
    out: list[Message] = []
    changed = False
    for message in reversed(tail):
        if message.role != "tool" and not message.tool_results:
            out.append(message)
            continue
        parts = []
        for part in reversed(message.parts):
            if isinstance(part, ToolResult):
                seen += 1
                marker = PRUNED.format(n=len(part.content))
                if seen > _KEEP_RESULTS and len(part.content) > len(marker):
                    part = ToolResult(call_id=part.call_id, content=marker,
                                      is_error=part.is_error)
                    changed = True
            parts.append(part)
        parts.reverse()
        out.append(replace(message, parts=tuple(parts)))
    out.reverse()
    return ([*tail] if not changed else out), changed


def _cap(summary: str, cap: int) -> str:
    if text_tokens(summary) <= cap:
        return summary
    keep = max(0, cap * 4 - len(TRUNCATED))
    while keep and text_tokens(summary[:keep]) > cap:
        keep = int(keep * 0.9)
    return summary[:keep] + TRUNCATED


def _resalvaged(prefix: Sequence[Message], head: Sequence[Message], tail: Sequence[Message],
                salvaged: list[str], price: Callable[[Message | None, Sequence[Message]], int],
                unchanged: Outcome, cut: int) -> Outcome:
    """A head that is the last compaction's summary alone: summarizing it again would pay for a
    request to say the same in as many words, so it stays as it is and only the tail may gain
    (its old tool results pruned)."""
    tokens = price(None, [*head, *tail])
    if tokens >= unchanged.tokens_before:
        tail, pruned = _prune_results(tail)
        if pruned:
            salvaged.append("pruned old tool results")
        tokens = price(None, [*head, *tail])
    if tokens >= unchanged.tokens_before:
        return replace(unchanged, reason="nothing to gain: the history before the retained "
                                         "turns is already one compaction's summary, and "
                                         "nothing after it can shrink")
    return Outcome(compacted=True, messages=(*prefix, *head, *tail),
                   tokens_before=unchanged.tokens_before, tokens_after=tokens, cut=cut,
                   salvaged=tuple(salvaged))


async def compact_history(history: Sequence[Message], *, estimator: Estimator,
                          summarize: Summarize, keep: int | None = None,
                          window: int | None = None, pending: Sequence[Message] = (),
                          budget: int | None = None, rules: CompactionRules | None = None,
                          summary_rules: CompactionRules | None = None, summary_cap: int = 2000,
                          prompt_budget: int | None = None,
                          native: NativeSummarize | None = None) -> Outcome:
    """Decide, summarize and salvage; pure apart from the ``summarize`` / ``native`` calls.

    ``keep``: at least that many messages stay verbatim. None: the retained tail is bounded by
    tokens (``tail_budget(window, before)``): the walk keeps the longest tail under it, and a
    tail still over it (the current exchange alone) has its bulky tool outputs shortened
    (``TRIMMED``), which may compact a conversation with no cut point at all (nothing is then
    summarized). ``native`` is asked first with the head as it is (system prefix included);
    when it declines, or its block has no readable summary, ``summarize`` gets the summary
    prompt. Reasoning is never touched; a result not smaller than ``before`` is refused."""
    rules = rules or CompactionRules()
    before = estimator.price([*history, *pending])
    unchanged = Outcome(compacted=False, messages=tuple(history), tokens_before=before,
                        tokens_after=before)
    prefix = list(history[:_prefix_end(history)])
    cuts = cut_points(history, pending, rules)
    if keep is not None:
        cuts = [c for c in cuts if c <= len(history) - keep]
        if not cuts:
            return replace(unchanged, reason=f"nothing to compact: no cut point before the last "
                                             f"{keep} turns that keeps tool calls with their "
                                             "results and the current tool loop whole")

    def price(summary: Message | None, tail: Sequence[Message]) -> int:
        return estimator.price([*prefix, *([summary] if summary else []), *tail, *pending])

    reserve = checkpoint("x" * (summary_cap * 4))
    limit = None if keep is not None else tail_budget(window, before)
    ceiling = budget
    if limit is not None:
        room = price(reserve, ()) + limit
        ceiling = room if budget is None else min(budget, room)
    cut = _walk(lambda c: price(reserve, history[c:]), cuts, ceiling) if cuts else len(prefix)
    head = history[len(prefix):cut]
    tail, salvaged = list(history[cut:]), []
    if limit is not None:
        stand = reserve if head else None
        room = price(stand, ()) + limit
        tail, shortened = _shorten(tail, lambda kept: price(stand, kept) <= room)
        if shortened:
            salvaged.append("shortened bulky tool outputs")
    if not head:  # no cut point: the salvaged tail is all there is to gain
        tokens = price(None, tail)
        if tokens >= before:
            return replace(unchanged, reason="nothing to compact: no cut point keeps tool calls "
                                             "with their results and the current exchange "
                                             f"whole, and no tool output in it is over "
                                             f"{_TRIM_FLOOR} characters to shorten")
        return Outcome(compacted=True, messages=(*prefix, *tail), tokens_before=before,
                       tokens_after=tokens, cut=cut, salvaged=tuple(salvaged))
    if all(is_checkpoint(m) for m in head):
        return _resalvaged(prefix, head, tail, salvaged, price, unchanged, cut)
    made = await _summary([*prefix], head, summarize, native,
                          reading=(summary_rules or rules).summarize_reasoning,
                          prompt_budget=prompt_budget)
    if isinstance(made, str):
        return replace(unchanged, reason=made)
    text, block, signed = made
    dropped = sum(1 for m in head if is_checkpoint(m))
    meta: dict[str, Any] = {"summarized": len(head), "shadowed": dropped}
    if block is not None:
        meta["native"] = True
    summary = checkpoint(text.strip(), block, **meta)
    tokens = price(summary, tail)
    goal = before - 1 if budget is None else min(budget, before - 1)
    if tokens > goal:
        tail, pruned = _prune_results(tail)
        if pruned:
            salvaged.append("pruned old tool results")
            tokens = price(summary, tail)
    if tokens > goal and text_tokens(text) > summary_cap and not signed:
        # (a native block's summary is signed: never capped, never reworded)
        summary = checkpoint(_cap(text.strip(), summary_cap), **meta)
        salvaged.append("capped the summary")
        tokens = price(summary, tail)
    if tokens >= before:
        return replace(unchanged, salvaged=tuple(salvaged),
                       reason=f"nothing to gain: the compacted history would cost {tokens} "
                              f"tokens, not less than the {before} it costs now")
    return Outcome(compacted=True, messages=(*prefix, summary, *tail), tokens_before=before,
                   tokens_after=tokens, cut=cut, summarized=len(head),
                   salvaged=tuple(salvaged), dropped_checkpoints=dropped)
