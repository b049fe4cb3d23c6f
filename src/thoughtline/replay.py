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

import dataclasses
import hashlib
import itertools
from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson

from thoughtline.messages import Message, Opaque, Origin, ToolResult, tool_results
from thoughtline.routes.resolve import Profile, Route
from thoughtline.verdicts import Verdict
from thoughtline.wire.stored import Joined, StoredHistory, shape_of

__all__ = ["ReplayPlan", "Verdict", "answered", "applicable", "loop_start", "plan", "plan_digest"]


@dataclass(frozen=True, kw_only=True, slots=True)
class ReplayPlan:
    """What one request may carry: the codec sends exactly this and nothing else.

    ``profile`` is the route's API profile after verdicts; ``target`` is where the request goes
    (for the signature scope); ``fingerprints`` are opaque values the provider rejected before.
    ``settings`` are per-session API settings (not part of the cache key: they shape the body,
    not a stored turn's wire form, unless a codec reads them per turn and says so in its key).
    """

    profile: Profile
    target: Origin | None = None
    fingerprints: frozenset[str] = frozenset()
    settings: Mapping[str, Any] = field(default_factory=dict, compare=False, hash=False)
    #: Who the provider issues this request's opaque values to, as far as it is known: the
    #: route's account, else a digest of the key (never the key). What a codec stamps on the
    #: encrypted items an answer issued, so that "was not issued to this caller" can name whose
    #: items those were. Not part of the cache key: it changes no wire form.
    issuer: str = field(default="", compare=False, hash=False)
    #: ``may_replay``'s answers by origin identity (with the origin: an id can be reused). A
    #: walk asks once per turn and per part, and hashing a profile and two origins for the
    #: profile's own cache cost a cold Gemini build about 4%. Made anew for every plan
    #: (``init=False``: ``dataclasses.replace`` never carries it to another profile or target).
    _scoped: dict[int, tuple[Origin, bool]] = field(default_factory=dict, init=False,
                                                    compare=False, hash=False, repr=False)

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
        known = self._scoped.get(id(origin))
        if known is not None and known[0] is origin:
            return known[1]
        answer = bool(self.profile.accepts(origin, self.target))
        if len(self._scoped) < 4096:  # (a bound: a plan lives for one request or one session)
            self._scoped[id(origin)] = (origin, answer)
        return answer

    def rejected(self, fingerprint: str) -> bool:
        return fingerprint in self.fingerprints


def foreign_compactions(history: Sequence[Message], route: Route) -> list[str]:
    """The providers whose native compaction blocks in ``history``'s checkpoints ``route`` will
    not get: a compaction is readable only by the provider that produced it
    (developers.openai.com/api/docs/guides/compaction; the Anthropic compaction-on-demand page), so
    another route gets the checkpoint's summary text instead. For the request log."""
    out = []
    for message in history:
        own = message.native.get("thoughtline")
        if message.role != "user" or not isinstance(own, Mapping) or "checkpoint" not in own:
            continue
        for part in message.parts:
            if not isinstance(part, Opaque) or part.origin is None:
                continue
            origin = part.origin
            if part.namespace and (origin.api, origin.provider, origin.host) != (
                    route.api, route.provider, route.host):
                out.append(origin.provider)
    return out


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
         account: str = "", region: str = "", issuer: str = "") -> ReplayPlan:
    """The plan for one request on ``route`` after applying what was learned for it."""
    profile = route.profile.narrowed(applicable(route, verdicts))
    return ReplayPlan(profile=profile, target=target_of(route, account=account, region=region),
                      fingerprints=frozenset(fingerprints), settings=dict(settings or {}),
                      issuer=issuer)


# --- history views ------------------------------------------------------------------------------


def loop_start(history: Sequence[Message]) -> int:
    """Index of the first turn of the current tool loop.

    "In-loop" is every assistant turn after the last user message that is not only tool results
    (docs.anthropic.com/en/docs/build-with-claude/extended-thinking); a history with no such user
    message is all in the loop. A resumed history is read from its stored facts
    (``TurnFacts.opens``), decoding nothing.
    """
    if isinstance(history, Joined | StoredHistory) and not history.decoded:
        for index in range(len(history) - 1, -1, -1):
            if history.facts(index).opens:
                return index + 1
        return 0
    for index in range(len(history) - 1, -1, -1):
        message = history[index]
        if message.role == "user" and any(not isinstance(p, ToolResult) for p in message.parts):
            return index + 1
    return 0


UNANSWERED = ("(no result: the request that carried this tool's result failed or was interrupted "
              "before the model saw it)")


def answered(history: Sequence[Message], pending: Sequence[Message] = ()) -> Sequence[Message]:
    """``history`` + ``pending`` with an error result for every tool call nobody answered.

    A tool loop whose results never reached the provider (their request failed) would leave an
    assistant turn with unanswered calls that every later request is rejected for. The view adds
    one error result per missing call right after that turn; stored history is untouched. When
    nothing is missing the view is ``Joined`` (no copy, nothing decoded: a resumed history is
    checked through its stored ``meta``).
    """
    joined = Joined(history, pending)
    repairs = _unanswered(joined)
    if not repairs:
        return joined
    out: list[Message] = []
    for index, message in enumerate(joined):
        missing = repairs.get(index)
        if missing:
            out.append(tool_results(ToolResult(call_id=c, content=UNANSWERED, is_error=True)
                                    for c in missing))
        out.append(message)
    return out


#: The scan state at the end of recently seen stored histories (a session's history only grows,
#: so each request scans just its new turns): id(base) -> (copy of the base scanned, pending
#: call ids, repairs found). A copy, compared before use: a list edited in place is rescanned.
_SCANS: OrderedDict[int, tuple[list[Message], list[str], dict[int, list[str]]]] = OrderedDict()
_SCANS_KEPT = 32

#: The state of the scan after a history: the calls still waiting for results, and the repairs.
ScanState = tuple[list[str], dict[int, list[str]]]


def _unanswered(joined: Joined) -> dict[int, list[str]]:
    """Index of the message before which error results go -> the call ids they answer."""
    return _scan(joined)[1]


def scan_state(history: Sequence[Message]) -> ScanState:
    """The unanswered-call scan after all of ``history``: what a resumed session stores so its
    next request starts from there instead of reading every turn's ``meta``."""
    return _scan(Joined(history, ()))


def scan_to_json(state: ScanState) -> bytes:
    pending, repairs = state
    return orjson.dumps({"p": pending, "r": [[i, ids] for i, ids in sorted(repairs.items())]})


def scan_from_json(data: bytes) -> ScanState | None:
    """A stored scan state (None when it is not one: then the history is scanned)."""
    try:
        raw = orjson.loads(data)
        pending = [str(c) for c in raw["p"]]
        repairs = {int(i): [str(c) for c in ids] for i, ids in raw["r"]}
    except (orjson.JSONDecodeError, KeyError, TypeError, ValueError):
        return None
    return pending, repairs


def _scan(joined: Joined) -> ScanState:
    base = joined.base
    start, pending, repairs = 0, [], {}
    cacheable = type(base) is list
    # a resumed history: the stored scan of what it read
    stored = joined.stored.scan if joined.stored is not None else None
    if stored is not None:
        start, (pending, repairs) = stored[0], (list(stored[1]), dict(stored[2]))
    elif cacheable:
        hit = _SCANS.get(id(base))
        if hit is not None and len(hit[0]) <= len(base) and base[:len(hit[0])] == hit[0]:
            start, pending, repairs = len(hit[0]), list(hit[1]), dict(hit[2])
    split = len(base)
    for index, (role, calls, results, incomplete) in enumerate(_shapes(joined, start), start):
        if index == split and cacheable:
            _remember(base, pending, repairs)
        if pending:
            missing = [c for c in pending if c not in results]
            if missing and role != "tool":
                repairs[index] = missing
            pending = [] if role != "tool" else missing
        if role == "assistant" and not incomplete:
            pending = list(calls)
    if cacheable and len(joined) == split:
        _remember(base, pending, repairs)
    return pending, repairs


def _remember(base: Sequence[Message], pending: list[str],
              repairs: dict[int, list[str]]) -> None:
    _SCANS[id(base)] = (list(base), list(pending), dict(repairs))
    _SCANS.move_to_end(id(base))
    while len(_SCANS) > _SCANS_KEPT:
        _SCANS.popitem(last=False)


def _shapes(joined: Joined, start: int = 0,
            ) -> Iterable[tuple[str, Sequence[str], Sequence[str], bool]]:
    """(role, tool-call ids, tool-result ids, incomplete) of every message from ``start``,
    decoding nothing that a stored history can answer from its facts."""
    stored = joined.stored
    if stored is None or stored.decoded:
        messages: Iterable[Message] = itertools.islice(joined, start, None)
    else:
        yield from stored.shapes(start)
        size = len(stored)
        messages = joined.extra if start <= size else joined.extra[start - size:]
    for m in messages:
        yield shape_of(m)


def plan_digest(plan: ReplayPlan, *, api: str, version: str) -> str:
    """A digest of what a stored turn's wire form depends on, stable across processes.

    ``version`` is the codec's wire-form version: changing how a codec encodes a turn changes the
    digest, so stale stored forms are simply not found.
    """
    key = orjson.dumps({"api": api, "v": version, "key": _stable(plan.key)},
                       option=orjson.OPT_SORT_KEYS)
    return "plan:" + hashlib.sha256(key).hexdigest()[:32]


def _stable(value: Any) -> Any:
    """``value`` as plain JSON with a fixed order (sets sorted, dataclasses by compared fields)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _stable(getattr(value, f.name)) for f in dataclasses.fields(value)
                if f.compare}
    if isinstance(value, frozenset | set):
        return sorted((_stable(v) for v in value), key=lambda v: orjson.dumps(
            v, option=orjson.OPT_SORT_KEYS))
    if isinstance(value, list | tuple):
        return [_stable(v) for v in value]
    if isinstance(value, Mapping):
        return {str(k): _stable(v) for k, v in value.items()}
    return value
