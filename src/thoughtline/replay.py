"""Per-request replay decisions shared by every API: the ``ReplayPlan`` a codec obeys.

This module owns the step between a resolved route and a codec: the route's profile says what the
route reads; the verdicts learned for exactly this (provider, host, model) narrow it (or, for a
learned pad, widen it); rejected fingerprints are never sent again; the signature scope (the
profile's ``accepts``) decides which stored opaque values the target can read. The result is a
small hashable value the codec obeys and keys its wire cache by. It also offers the few history
views every API needs (the current tool loop, answered tool calls). Nothing here knows a wire
shape; nothing here mutates a history.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from thoughtline.messages import Message, Origin, ToolResult, tool_results
from thoughtline.routes.resolve import Route
from thoughtline.verdicts import Verdict

__all__ = ["ReplayPlan", "Verdict", "answered", "applicable", "loop_start", "plan"]


@dataclass(frozen=True, kw_only=True, slots=True)
class ReplayPlan:
    """What one request may carry: the codec sends exactly this and nothing else.

    ``profile`` is the route's API profile after verdicts; ``target`` is where the request goes
    (for the signature scope); ``fingerprints`` are opaque values the provider rejected before.
    ``settings`` are per-session API settings (not part of the cache key: they shape the body,
    not a stored turn's wire form, unless a codec reads them per turn and says so in its key).
    """

    profile: Any
    target: Origin | None = None
    fingerprints: frozenset[str] = frozenset()
    settings: Mapping[str, Any] = field(default_factory=dict, compare=False, hash=False)

    @property
    def key(self) -> tuple[Any, ...]:
        """What the wire form of a stored turn depends on (the codec's cache key)."""
        return (self.profile, self.target, self.fingerprints)

    def may_replay(self, origin: Origin | None) -> bool:
        """The signature scope: may opaque reasoning made at ``origin`` go on this request?

        A value with no recorded origin is the caller's own; a plan with no target (built by hand)
        has no scope rule. Otherwise the route's profile decides.
        """
        if origin is None or self.target is None:
            return True
        return bool(self.profile.accepts(origin, self.target))

    def rejected(self, fingerprint: str) -> bool:
        return fingerprint in self.fingerprints

    # --- Chat Completions conveniences (the profile's fields, for the chat codec and tests) ----

    def produced_here(self, origin: Origin | None) -> bool:
        return self.may_replay(origin)


def applicable(route: Route, verdicts: Iterable[Verdict]) -> list[Verdict]:
    """The verdicts recorded for exactly this route's (provider, host, model)."""
    key = (route.provider, route.host, route.model)
    return [v for v in verdicts if v.key == key]


def target_of(route: Route, *, account: str = "", region: str = "") -> Origin:
    """The origin a reply on ``route`` will carry; opaque values are checked against it."""
    return Origin(api=route.api, provider=route.provider, host=route.host, model=route.model,
                  account=account, region=region)


def plan(route: Route, verdicts: Iterable[Verdict] = (), *,
         fingerprints: Iterable[str] = (), settings: Mapping[str, Any] | None = None,
         account: str = "", region: str = "") -> ReplayPlan:
    """The plan for one request on ``route`` after applying what was learned for it."""
    profile = route.profile.narrowed(applicable(route, verdicts))
    return ReplayPlan(profile=profile, target=target_of(route, account=account, region=region),
                      fingerprints=frozenset(fingerprints), settings=dict(settings or {}))


# --- history views ------------------------------------------------------------------------------


def loop_start(history: Sequence[Message]) -> int:
    """Index of the first turn of the current tool loop.

    "In-loop" is every assistant turn after the last user message that is not only tool results
    (provider-contracts §5); a history with no such user message is all in the loop.
    """
    for index in range(len(history) - 1, -1, -1):
        message = history[index]
        if message.role == "user" and any(not isinstance(p, ToolResult) for p in message.parts):
            return index + 1
    return 0


UNANSWERED = ("(no result: the request that carried this tool's result failed or was interrupted "
              "before the model saw it)")


def answered(history: Sequence[Message]) -> list[Message]:
    """``history`` with an error result for every tool call nobody answered.

    A tool loop whose results never reached the provider (their request failed) would leave an
    assistant turn with unanswered calls that every later request is rejected for. The view adds
    one error result per missing call right after that turn; stored history is untouched.
    """
    out: list[Message] = []
    pending: list[str] = []
    for message in history:
        if pending:
            given = {p.call_id for p in message.parts if isinstance(p, ToolResult)}
            missing = [c for c in pending if c not in given]
            if missing and message.role != "tool":
                out.append(tool_results(ToolResult(call_id=c, content=UNANSWERED, is_error=True)
                                        for c in missing))
            pending = [] if message.role != "tool" else missing
        out.append(message)
        if message.role == "assistant" and not message.incomplete:
            pending = [c.id for c in message.tool_calls]
    return out
