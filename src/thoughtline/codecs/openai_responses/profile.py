"""The Responses route profile: what one route reads back (``routes/openai-responses.toml``).

Owns the typed, frozen profile (stateless switches, which reasoning parameters the route takes, the
scope of encrypted items) and the resolution of a (provider, base URL, model) to a ``Route``. The
row data says *what* a route does; how that becomes a body is ``encode``'s business.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

from thoughtline.codecs.base import Profile
from thoughtline.codecs.openai_responses.wire import API, ENCRYPTED, INCLUDE_ENCRYPTED, NS, PHASE
from thoughtline.errors import ConfigError
from thoughtline.messages import Origin
from thoughtline.routes.resolve import ApiRow, Route, api_table, hostname_of
from thoughtline.verdicts import Verdict

#: How far an encrypted item travels: any model at the issuing service ("provider"), the same model
#: in any dated snapshot ("family"), or only the exact model id ("model").
Scope = Literal["provider", "family", "model"]
_SCOPES = ("provider", "family", "model")
#: The request switches a verdict may turn off (a route that 400s on one as an unknown field).
SWITCHES = frozenset({"store", "include", PHASE, "reasoning.context"})
_DATED = re.compile(r"-(?:\d{4}-\d{2}-\d{2}|\d{4}|\d{8})$")


def model_family(model: str) -> str:
    """A model id without its dated snapshot suffix: ``gpt-5.5-2026-04-23`` → ``gpt-5.5``."""
    return _DATED.sub("", model.strip().lower())


@dataclass(frozen=True, kw_only=True, slots=True)
class ResponsesProfile(Profile):
    """What a Responses route reads back (hashable: it keys the wire cache).

    ``stateless`` sends ``store: false``; ``include`` asks for encrypted reasoning; ``phase``
    resends the assistant message phase; ``plain_reasoning`` replays reasoning items that carry
    no encrypted content (readable ``reasoning_text`` items: DeepSeek, OpenRouter raw CoT);
    ``params`` are the reasoning request parameters the route takes (``effort``, ``summary``,
    ``context``, ``mode``); ``context`` is the default ``reasoning.context`` for this model
    ("" = none sent); ``scope`` bounds where encrypted items may go. ``openai_sealed``: the
    route is OpenAI's own API, which reads what OpenAI seals for Codex where the gateway never
    saw the issuer (a multi-agent ``agent_message``'s ``encrypted_content``, a ``compaction``
    item the client kept): no other route gets those (``agents``).
    """

    stateless: bool = True
    include: bool = True
    phase: bool = True
    plain_reasoning: bool = False
    params: frozenset[str] = frozenset({"effort"})
    context: str = ""
    scope: Scope = "model"
    reasoning_keys: frozenset[str] = frozenset()
    openai_sealed: bool = False

    def narrowed(self, verdicts: Sequence[Verdict]) -> ResponsesProfile:
        dropped: set[str] = set()
        for verdict in verdicts:
            dropped |= verdict.drop & SWITCHES
        if not dropped:
            return self
        return replace(self, stateless=self.stateless and "store" not in dropped,
                       include=self.include and "include" not in dropped,
                       phase=self.phase and PHASE not in dropped,
                       context="" if "reasoning.context" in dropped else self.context)

    def accepts(self, origin: Origin, target: Origin) -> bool:
        """Encrypted items decrypt only where they were issued: the same API, the same service
        (host, else provider id), the same account/organisation when both are known, and — per
        ``scope`` — the same model or model family. A relay with the same provider id at another
        host cannot read them (its rejection: "was not issued to this caller")."""
        if origin.api != target.api:
            return False
        if origin.host or target.host:
            if origin.host != target.host:
                return False
        elif origin.provider != target.provider:
            return False
        if origin.account and target.account and origin.account != target.account:
            return False
        if self.scope == "model":
            return origin.model.lower() == target.model.lower()
        if self.scope == "family":
            return model_family(origin.model) == model_family(target.model)
        return True

    @property
    def sealed(self) -> bool:
        """Replayed reasoning items keep their ``encrypted_content``."""
        return not self.reasoning_keys or ENCRYPTED in self.reasoning_keys

    def describe(self) -> list[str]:
        where = {"provider": "any model of the service that issued them",
                 "family": "the same model (any dated snapshot) at the service that issued them",
                 "model": "only the exact model, at the service that issued them"}[self.scope]
        what = ("every encrypted reasoning item verbatim" if self.sealed
                else "each reasoning item without its encrypted_content")
        lines = [f"replayed: {what}, in its place, to {where}"]
        if self.plain_reasoning:
            lines.append("replayed: readable reasoning items (reasoning_text) too")
        if self.reasoning_keys:
            lines.append("reasoning items carry only: " + ", ".join(sorted(self.reasoning_keys)))
        if self.phase:
            lines.append("replayed: the assistant message phase (commentary / final_answer)")
        if self.openai_sealed:
            lines.append("replayed: items OpenAI sealed for a client (agent_message, compaction)")
        switches = [s for s, on in (("store=false", self.stateless),
                                    ("include=[reasoning.encrypted_content]", self.include))
                    if on]
        if switches:
            lines.append("stateless request switches: " + ", ".join(switches))
        if self.context:
            lines.append(f"reasoning.context = {self.context!r} (earlier turns' reasoning is "
                         "rendered into the next sample)")
        return lines

    def public_json(self) -> dict[str, Any]:
        carriers = [*([ENCRYPTED] if self.sealed else []), *([PHASE] if self.phase else []),
                    *(["reasoning_text"] if self.plain_reasoning else [])]
        extras: dict[str, Any] = {}
        if self.stateless:
            extras["store"] = False
        if self.include:
            extras["include"] = [INCLUDE_ENCRYPTED]
        if self.context:
            extras["reasoning"] = {"context": self.context}
        out = {"carriers": sorted(carriers), "must_echo": False, "body_extras": extras,
               "native": [NS], "scope": self.scope, "reasoning_params": sorted(self.params)}
        if self.reasoning_keys:
            out["reasoning_keys"] = sorted(self.reasoning_keys)
        return out


def profile_of(row: ApiRow, model: str) -> ResponsesProfile:
    """The typed profile of a table row for ``model``; raises ConfigError on bad data."""
    raw: Mapping[str, Any] = row.profile
    try:
        scope = str(raw.get("scope", "model"))
        if scope not in _SCOPES:
            raise ValueError(f"scope must be one of {', '.join(_SCOPES)}, not {scope!r}")
        keys = frozenset(str(k) for k in raw.get("reasoning_keys", ()))
        if keys and "type" not in keys:
            raise ValueError("reasoning_keys must keep 'type'")
        context = ""
        patterns = [re.compile(p, re.I) for p in raw.get("context_models", ())]
        if any(p.search(model) for p in patterns):
            context = str(raw.get("context", ""))
        return ResponsesProfile(
            stateless=bool(raw.get("stateless", True)), include=bool(raw.get("include", True)),
            phase=bool(raw.get("phase", True)),
            plain_reasoning=bool(raw.get("plain_reasoning", False)),
            params=frozenset(str(p) for p in raw.get("params", ("effort",))),
            context=context, scope=scope,  # type: ignore[arg-type]
            reasoning_keys=keys, openai_sealed=bool(raw.get("openai_sealed", False)))
    except (TypeError, ValueError, re.error) as exc:
        raise ConfigError(f"{API} route row {row.id!r}: bad profile data ({exc})") from exc


def resolve_responses(provider: str, base_url: str | None, model: str) -> Route:
    """The Responses route for (provider id, base URL, model)."""
    table = api_table(API)
    row = table.match(provider, base_url)
    profile = profile_of(row, model)
    return Route(row=row.id, api=API, provider=provider.strip().lower(),
                 host=hostname_of(base_url), model=model, profile=profile, explain=row.explain)
