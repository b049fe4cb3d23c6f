"""Claude model ids and per-model facts, for every codec that speaks to Claude.

Owns the normalisation of one model's ids across platforms (Anthropic API ``claude-sonnet-4-5``,
Bedrock ``us.anthropic.claude-sonnet-4-5-20250929-v1:0`` and regional profiles such as
``apne1.anthropic.…``, inference-profile ARNs, Vertex ``claude-sonnet-4-5@20250929``,
OpenRouter-style ``anthropic/claude-sonnet-4.5``) and the reading of ``routes/claude-models.toml``:
which thinking configuration a model takes, whether it keeps earlier turns' thinking, binds blocks
to their prefix or to the account. The Anthropic Messages codec and the Bedrock Converse codec
both ask here, so they cannot disagree. Pure: no I/O beyond reading the packaged table once.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache, lru_cache
from typing import Any, Literal, TypeAlias

from thoughtline.errors import ConfigError
from thoughtline.packaged import packaged_text

ThinkingStyle: TypeAlias = Literal["adaptive-only", "adaptive", "manual", "none"]
Version: TypeAlias = tuple[int, int]

_NEW = re.compile(r"claude-(?P<family>[a-z]+)-(?P<major>\d+)(?:-(?P<minor>\d{1,2}))?(?:-.*)?")
_OLD = re.compile(r"claude-(?P<major>\d+)(?:-(?P<minor>\d))?-(?P<family>[a-z]+)(?:-.*)?")
_DATE = re.compile(r"(?:-|@)(?:\d{8}|latest)$")
_BEDROCK_VERSION = re.compile(r"-v\d+(?::\d+)?$")
_NEVER = (10**6, 0)


@dataclass(frozen=True, kw_only=True, slots=True)
class ClaudeModel:
    """A parsed Claude model id: family and (major, minor) version."""

    family: str
    version: Version

    def at_least(self, major: int, minor: int = 0) -> bool:
        return self.version >= (major, minor)


@dataclass(frozen=True, kw_only=True, slots=True)
class Floors:
    """A version floor per family (``other`` for the rest); the fact holds from it on."""

    by_family: Mapping[str, Version]
    other: Version

    def met(self, model: ClaudeModel) -> bool:
        return model.version >= self.by_family.get(model.family, self.other)


@dataclass(frozen=True, kw_only=True, slots=True)
class Table:
    """``routes/claude-models.toml``, typed."""

    profile_prefix: str  # a regular-expression alternation (compiled on first use)
    thinking_from: Version
    adaptive_only: Floors
    adaptive: Floors
    interleaved_beta: str
    interleaved_majors: frozenset[int]
    keeps_prior_thinking: Floors
    binds_blocks: Floors
    account_bound: Floors


def _version(text: Any, where: str) -> Version:
    if text == "never":
        return _NEVER
    major, _, minor = str(text).partition(".")
    try:
        return int(major), int(minor or 0)
    except ValueError as exc:
        raise ConfigError(f"claude-models.toml {where}: {text!r} is not a version") from exc


def _floors(raw: Mapping[str, Any], where: str) -> Floors:
    versions = {family: _version(v, f"{where}.{family}") for family, v in raw.items()}
    return Floors(by_family=versions, other=versions.pop("other", _NEVER))


@cache
def table() -> Table:
    raw = tomllib.loads(packaged_text("thoughtline.routes", "claude-models.toml"))
    try:
        thinking = raw["thinking"]
        prefix = raw["ids"]["profile_prefix"]
        return Table(
            profile_prefix=str(prefix),
            thinking_from=_version(thinking["from"], "thinking.from"),
            adaptive_only=_floors(thinking["adaptive_only"], "thinking.adaptive_only"),
            adaptive=_floors(thinking["adaptive"], "thinking.adaptive"),
            interleaved_beta=str(thinking.get("interleaved_beta", "")),
            interleaved_majors=frozenset(int(m) for m in thinking.get("interleaved_majors", ())),
            keeps_prior_thinking=_floors(raw["keeps_prior_thinking"]["from"],
                                         "keeps_prior_thinking"),
            binds_blocks=_floors(raw["binds_blocks"]["from"], "binds_blocks"),
            account_bound=_floors(raw["account_bound"]["from"], "account_bound"))
    except (KeyError, TypeError, AttributeError) as exc:
        raise ConfigError(f"claude-models.toml: malformed ({exc!r})") from exc


@cache
def _profile_prefix() -> re.Pattern[str]:
    """The table's profile prefix before ``<vendor>.<model>``, compiled once it is needed."""
    try:
        return re.compile(rf"^(?:{table().profile_prefix})\.(?=[a-z0-9-]+\.)")
    except re.error as exc:
        raise ConfigError(f"claude-models.toml: malformed ids.profile_prefix ({exc})") from exc


def strip_profile_prefix(model_id: str) -> tuple[str, bool]:
    """A lower-cased Bedrock id without its inference-profile prefix (``us.``, ``apne1.``,
    ``global.`` …), and whether it had one. An id with fewer than two dots has none (a prefix is
    followed by ``<vendor>.``), so most ids need neither the table nor its pattern."""
    if model_id.count(".") < 2:
        return model_id, False
    stripped = _profile_prefix().sub("", model_id, count=1)
    return stripped, stripped != model_id


@lru_cache(maxsize=512)
def normalize(model: str) -> str:
    """One model's id on every platform, e.g. ``claude-sonnet-4-5``.

    Strips an ARN (to its last ``/``), ``anthropic/`` (gateways), an inference-profile prefix,
    the ``anthropic.`` vendor prefix (Bedrock), a ``-v1:0`` Bedrock version, an ``@20250929``
    (Vertex) or ``-20250929`` date; dots in a version become dashes.
    """
    name = model.strip().lower()
    name = name.rsplit("/", 1)[-1] if name.startswith("arn:") else name
    name = strip_profile_prefix(name.removeprefix("anthropic/"))[0]
    name = name.removeprefix("anthropic.")
    name = _BEDROCK_VERSION.sub("", name)
    name = _DATE.sub("", name)
    return re.sub(r"(?<=\d)\.(?=\d)", "-", name) if "." in name else name


def is_claude(model: str) -> bool:
    return "claude" in normalize(model)


@lru_cache(maxsize=512)
def parse(model: str) -> ClaudeModel | None:
    """The family and version of a Claude id, or None when it does not parse."""
    name = normalize(model)
    for pattern in (_OLD, _NEW):
        found = pattern.fullmatch(name)
        if found and not found["family"].isdigit():
            minor = int(found["minor"]) if found["minor"] else 0
            return ClaudeModel(family=found["family"], version=(int(found["major"]), minor))
    return None


def keeps_prior_thinking(model: str) -> bool:
    """Does the model keep earlier turns' thinking? Unparseable Claude ids keep everything."""
    parsed = parse(model)
    return parsed is None or table().keeps_prior_thinking.met(parsed)


def binds_blocks(model: str) -> bool:
    """Preserved thinking: are the model's blocks bound to their prefix?"""
    parsed = parse(model)
    return parsed is not None and table().binds_blocks.met(parsed)


def account_bound(model: str) -> bool:
    """Are the model's blocks bound to the account that made them?"""
    parsed = parse(model)
    return parsed is not None and table().account_bound.met(parsed)


def thinking_style(model: str) -> ThinkingStyle:
    """Which thinking configuration the model takes.

    ``adaptive-only``: ``disabled`` and manual ``budget_tokens`` return 400; ``adaptive``:
    adaptive by default, manual still accepted (and unparseable ids); ``manual``:
    ``budget_tokens``; ``none``: no extended thinking.
    """
    parsed = parse(model)
    if parsed is None:
        return "adaptive"
    facts = table()
    if parsed.version < facts.thinking_from:
        return "none"
    if facts.adaptive_only.met(parsed):
        return "adaptive-only"
    return "adaptive" if facts.adaptive.met(parsed) else "manual"


def interleaving_beta(model: str) -> str:
    """The beta manual thinking between tool calls needs on this model ("" when none)."""
    parsed = parse(model)
    if parsed is None or thinking_style(model) != "manual":
        return ""
    facts = table()
    return facts.interleaved_beta if parsed.version[0] in facts.interleaved_majors else ""
