"""Claude model ids and the per-model facts the replay policy and thinking parameters rest on.

Owns the normalisation of one model's ids across platforms (Anthropic API ``claude-sonnet-4-5``,
Bedrock ``us.anthropic.claude-sonnet-4-5-20250929-v1:0``, Vertex ``claude-sonnet-4-5@20250929``,
OpenRouter-style ``anthropic/claude-sonnet-4.5``) and the version rules of
provider-contracts.md §5 and provider-updates.md §1a: which models keep earlier turns' thinking,
which bind blocks to their prefix (and to the account), which thinking configurations they take.
An id that names Claude but does not parse is kept permissively (the contracts say so).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal, TypeAlias

ThinkingStyle: TypeAlias = Literal["adaptive-only", "adaptive", "manual", "none"]

_REGION_PREFIXES = frozenset({"us", "eu", "global", "apac", "jp", "au", "ca", "us-gov"})
_NEW = re.compile(r"claude-(?P<family>[a-z]+)-(?P<major>\d+)(?:-(?P<minor>\d{1,2}))?(?:-.*)?")
_OLD = re.compile(r"claude-(?P<major>\d+)(?:-(?P<minor>\d))?-(?P<family>[a-z]+)(?:-.*)?")
_DATE = re.compile(r"(?:-|@)(?:\d{8}|latest)$")
_BEDROCK_VERSION = re.compile(r"-v\d+(?::\d+)?$")


@dataclass(frozen=True, kw_only=True, slots=True)
class ClaudeModel:
    """A parsed Claude model id: family and (major, minor) version."""

    family: str
    version: tuple[int, int]

    def at_least(self, major: int, minor: int = 0) -> bool:
        return self.version >= (major, minor)


@lru_cache(maxsize=512)
def normalize(model: str) -> str:
    """One model's id on every platform, e.g. ``claude-sonnet-4-5``.

    Strips ARN and profile prefixes (``arn:…/``, ``us.``/``eu.``/``global.``), the ``anthropic.``
    vendor prefix (Bedrock) or ``anthropic/`` (gateways), a ``-v1:0`` Bedrock version, an
    ``@20250929`` (Vertex) or ``-20250929`` date; dots in a version become dashes.
    """
    name = model.strip().lower()
    name = name.rsplit("/", 1)[-1] if name.startswith("arn:") else name
    name = name.removeprefix("anthropic/")
    while "." in name and name.split(".", 1)[0] in _REGION_PREFIXES:
        name = name.split(".", 1)[1]
    name = name.removeprefix("anthropic.")
    name = _BEDROCK_VERSION.sub("", name)
    name = _DATE.sub("", name)
    return re.sub(r"(?<=\d)\.(?=\d)", "-", name)


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
    """Does the model keep earlier turns' thinking (provider-contracts §5, confirmed by §1a)?

    Opus ≥ 4.5, Sonnet ≥ 4.6, Haiku ≥ 5.5, other Claude families ≥ 5.0; Claude 3 and older 4.x keep
    only the last assistant turn's. Unparseable Claude ids keep everything.
    """
    parsed = parse(model)
    if parsed is None:
        return True
    floors = {"opus": (4, 5), "sonnet": (4, 6), "haiku": (5, 5)}
    return parsed.at_least(*floors.get(parsed.family, (5, 0)))


def binds_blocks(model: str) -> bool:
    """Preserved thinking: blocks bound to their prefix (provider-updates §1a supportedModels:
    Fable and Mythos 5.1+, Opus, Sonnet and Haiku 5.5+)."""
    parsed = parse(model)
    if parsed is None:
        return False
    if parsed.family in ("fable", "mythos"):
        return parsed.at_least(5, 1)
    return parsed.family in ("opus", "sonnet", "haiku") and parsed.at_least(5, 5)


def account_bound(model: str) -> bool:
    """Sonnet 5.5 and Haiku 5.5 blocks are bound to the account that made them (§1a)."""
    parsed = parse(model)
    return (parsed is not None and parsed.family in ("sonnet", "haiku")
            and parsed.at_least(5, 5))


def reads(target: str, origin: str, *, claude_api: bool) -> bool:
    """The model check (§1a): can ``target`` read a thinking block ``origin`` made?

    The same model always can. Fable 5.1 also reads Opus 5 blocks, and Opus 5.5 blocks on the
    Claude API; Haiku 5.5 blocks are not model-locked (Bedrock binding page), but Haiku 5.5 itself
    drops every foreign block. Anything else counts as a different model (a signature check fails
    for blocks from a different model, provider-contracts §5).
    """
    if normalize(target) == normalize(origin):
        return True
    to, made = parse(target), parse(origin)
    if to is None or made is None:
        return False
    if to.family == "haiku" and to.at_least(5, 5):
        return False
    if made.family == "haiku" and made.at_least(5, 5):
        return True
    if to.family == "fable" and to.at_least(5, 1) and made.family == "opus":
        return made.version == (5, 0) or (claude_api and made.version == (5, 5))
    return False


def thinking_style(model: str) -> ThinkingStyle:
    """Which thinking configuration the model takes (provider-updates §1a, adaptive thinking).

    ``adaptive-only``: ``disabled`` and manual ``budget_tokens`` return 400 (Opus 4.7+, Sonnet 5+,
    Fable, Mythos and other 5.x families); ``adaptive``: adaptive by default, manual still accepted
    (Opus/Sonnet 4.6, Haiku 5.5, unparseable ids); ``manual``: ``budget_tokens`` (Claude 3.7, 4.x);
    ``none``: no extended thinking (Claude 3.5 and older).
    """
    parsed = parse(model)
    if parsed is None:
        return "adaptive"
    family, version = parsed.family, parsed.version
    if version[0] <= 3:
        return "manual" if version >= (3, 7) else "none"
    if family in ("opus", "sonnet"):
        only = (4, 7) if family == "opus" else (5, 0)
        return "adaptive-only" if version >= only else "adaptive" if version >= (4, 6) else "manual"
    if family == "haiku":
        return "adaptive" if version >= (5, 5) else "manual"
    return "adaptive-only" if version >= (5, 0) else "manual"


def rejects_forced_tool_choice(model: str) -> bool:
    """Fable 5.1 returns 400 on ``tool_choice`` ``any`` or a named tool (its migration guide)."""
    parsed = parse(model)
    return parsed is not None and parsed.family == "fable" and parsed.at_least(5, 1)


def manual_interleaving_beta(model: str) -> bool:
    """Manual thinking between tool calls needs the interleaved beta on Claude 4 / 4.1 (§1a)."""
    parsed = parse(model)
    return parsed is not None and parsed.version[0] == 4 and thinking_style(model) == "manual"
