"""Bedrock route profiles: which model a model id names, and what that model reads back.

Owns the parsing of Bedrock model ids — foundation-model and inference-profile ARNs, cross-region
profile ids (``us.``/``eu.``/``apac.``/``apne1.``/``global.`` …), application-inference-profile
ARNs — and turns ``routes/bedrock.toml`` into the typed, frozen ``BedrockProfile`` a replay plan
carries. Claude ids and facts (the profile prefixes, thinking modes) come from the table shared
with the Anthropic codec (``codecs.claude``): a Claude signature is valid on every Claude route of
the same model, and both codecs must name the same model the same way. What a carrier looks like
on the wire is ``encode``'s business; which parts of a turn go is ``policy``'s.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from functools import cache
from typing import Any

from thoughtline.codecs import claude
from thoughtline.codecs.base import Profile
from thoughtline.codecs.bedrock.wire import API, CARRIERS, REASONING, REASONING_TEXT, SIGNATURE
from thoughtline.errors import ConfigError
from thoughtline.messages import Origin
from thoughtline.routes.resolve import Route, api_table, hostname_of
from thoughtline.verdicts import Verdict

# ARNs that name their model: .../foundation-model/<id> and .../inference-profile/<profile id>.
_NAMED_ARN = re.compile(r"^arn:aws[\w-]*:bedrock:[\w-]*:\d*:"
                        r"(?:foundation-model|inference-profile)/")


@dataclass(frozen=True, kw_only=True, slots=True)
class ModelId:
    """What a Bedrock model id names: the base model, and whether it may leave one region."""

    raw: str
    base: str  # the foundation model id, lower-cased ("" when the id cannot say: app profiles)
    cross_region: bool  # a geography/global profile: the request may be served in another region


@cache
def model_id(raw: str) -> ModelId:
    lowered = raw.strip().lower()
    if lowered.startswith("arn:") and ":application-inference-profile/" in lowered:
        return ModelId(raw=raw, base="", cross_region=True)
    # A cross-region inference profile id is the model id behind a geography prefix
    # (inference-profiles-support.html); the prefixes are Claude-table data, shared.
    base, prefixed = claude.strip_profile_prefix(_NAMED_ARN.sub("", lowered))
    return ModelId(raw=raw, base=base, cross_region=prefixed)


@cache
def claude_key(model: str) -> str:
    """A Claude model's identity across platforms (``codecs.claude.normalize``):
    ``claude-sonnet-4-5`` for ``us.anthropic.claude-sonnet-4-5-20250929-v1:0``,
    ``claude-sonnet-4-5@20250929`` and ``claude-sonnet-4-5``; "" when ``model`` is not a Claude
    id."""
    return claude.normalize(model) if claude.is_claude(model) else ""


_WORDS = {"reasoningText": "readable reasoningText", "signature": "its signature",
          "redactedContent": "redactedContent verbatim"}


@dataclass(frozen=True, kw_only=True, slots=True)
class BedrockProfile(Profile):
    """What one Bedrock model reads back on replayed assistant turns, after what was learned.

    ``prior`` / ``loop`` are the carriers (``wire.CARRIERS``) sent on turns before the current tool
    loop and inside it; ``scope`` whose opaque values the model may read ("claude" or "model");
    ``signed_only``: readable reasoning goes only with its signature (Claude). ``thinking`` is the
    Claude request mode ("adaptive", "manual" or ""); ``effort`` the dotted path of a reasoning
    effort in the request's additional fields.
    """

    row: str
    family: str
    policy: str
    prior: frozenset[str]
    loop: frozenset[str]
    scope: str = "model"
    signed_only: bool = False
    region_bound: bool = False
    cross_region: bool = False
    claude: bool = False
    thinking: str = ""
    interleaved: str = ""
    manual_budget: int = 0
    effort: str = ""

    def carries(self, *, in_loop: bool) -> frozenset[str]:
        return self.loop if in_loop else self.prior

    def narrowed(self, verdicts: Sequence[Verdict]) -> BedrockProfile:
        dropped: set[str] = set()
        for verdict in verdicts:
            dropped |= verdict.drop
        if not dropped:
            return self
        if REASONING in dropped:
            dropped |= CARRIERS
        if REASONING_TEXT in dropped:
            dropped.add(SIGNATURE)  # a signature is never sent without its block's text field
        return replace(self, prior=self.prior - dropped, loop=self.loop - dropped)

    def accepts(self, origin: Origin, target: Origin) -> bool:
        """May an opaque value made at ``origin`` go to ``target``?

        Claude signatures and redacted blocks: to a Claude target of the same model, whichever
        platform made them (docs.anthropic.com/en/docs/build-with-claude/extended-thinking).
        Anything else: only the same Bedrock model; a region-bound value also only within its region
        and never through a cross-region profile.
        """
        if self.scope == "claude":
            key = claude_key(origin.model)
            return bool(key) and key == claude_key(target.model)
        if origin.api != API or claude_key(origin.model):
            return False
        same = model_id(origin.model).base == model_id(target.model).base
        if self.policy == "own" or not model_id(target.model).base:
            same = origin.model == target.model
        if self.region_bound:
            return same and not self.cross_region and origin.region == target.region
        return same

    def describe(self) -> list[str]:
        def words(carriers: frozenset[str]) -> str:
            return ", ".join(_WORDS[c] for c in sorted(carriers)) or "no reasoning"

        lines = [f"model policy: {self.policy} ({self.family})",
                 f"turns before the current tool loop carry: {words(self.prior)}",
                 f"turns inside the loop carry: {words(self.loop)}"]
        if self.scope == "claude":
            lines.append("Claude signatures and redacted blocks from any Claude platform are "
                         "replayed when they come from this same model; never an unsigned block")
        else:
            lines.append("only values this model made are replayed; never a Claude signature")
        if self.region_bound:
            lines.append("opaque reasoning is region-bound: never sent through a cross-region "
                         "profile or to another region")
        if self.thinking:
            lines.append(f"Claude thinking requested as {self.thinking}")
        return lines

    def public_json(self) -> dict[str, Any]:
        return {"carriers": sorted(self.prior | self.loop), "policy": self.policy,
                "family": self.family, "prior_turns": sorted(self.prior),
                "loop_turns": sorted(self.loop), "thinking": self.thinking}


# --- the table ----------------------------------------------------------------------------------


def _claude_request(model: str, sections: Mapping[str, Any]) -> dict[str, Any]:
    """The thinking mode of a Claude model on Converse, from the shared Claude table: adaptive
    (``adaptive-only`` too), manual (``enabled`` + a budget, with the interleaved beta where the
    model needs it) or none."""
    style = claude.thinking_style(model)
    if style == "none":
        return {}
    if style != "manual":
        return {"thinking": "adaptive"}
    return {"thinking": "manual", "interleaved": claude.interleaving_beta(model),
            "manual_budget": int(sections.get("claude", {}).get("manual_budget", 4096))}


@cache
def profile_for(model: str, row: str) -> BedrockProfile:
    """The profile of ``model`` on route row ``row`` (rules from ``routes/bedrock.toml``)."""
    sections = api_table(API).sections
    ident = model_id(model)
    probe = ident.base or model.lower()
    try:
        rule = next(r for r in sections["model"]
                    if any(s in probe for s in r.get("contains", ())))
        policy = sections["policies"][rule["policy"]]
    except (KeyError, StopIteration) as exc:
        raise ConfigError(f"bedrock route table: no model rule for {model!r} ({exc!r})") from exc
    extra = _claude_request(model, sections) if rule.get("claude") else {}
    return BedrockProfile(
        row=row, family=rule["id"], policy=rule["policy"],
        prior=frozenset(policy.get("prior", ())), loop=frozenset(policy.get("loop", ())),
        scope=policy.get("scope", "model"), signed_only=bool(policy.get("signed_only", False)),
        region_bound=bool(policy.get("region_bound", False)), cross_region=ident.cross_region,
        claude=bool(rule.get("claude", False)), effort=rule.get("effort", ""), **extra)


def resolve(provider: str, base_url: str | None, model: str) -> Route:
    """The Bedrock route for (provider id, endpoint URL, model id)."""
    table = api_table(API)
    row = table.match(provider, base_url)
    profile = profile_for(model, row.id)
    notes = () if model_id(model).base else (
        "application inference profile: the wrapped model is unknown; each value goes back only "
        "to this profile and rejections are learned",)
    return Route(row=row.id, api=API, provider=provider.strip().lower(),
                 host=hostname_of(base_url), model=model, profile=profile,
                 explain=f"{row.explain} ({profile.family}: {profile.policy})", notes=notes)
