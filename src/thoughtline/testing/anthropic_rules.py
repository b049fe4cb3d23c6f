"""What the emulated Anthropic Messages API refuses before it looks at replayed thinking.

Owns the emulator's own reading of the documented per-model facts (platform.claude.com
preserved-thinking and models pages:
which models bind blocks to their prefix, which bind them to the account, which think only
adaptively, which model reads which model's blocks) and the request checks that follow from them
and from the endpoints (Vertex: ``anthropic_version: vertex-2023-10-16`` in the body and no
``model``; the Anthropic API: an ``anthropic-version`` header; the binding setting needs its beta
header). Error bodies use the real envelope and wordings. Independent of ``thoughtline.codecs``
on purpose: the emulator must not agree with the codec by sharing its code.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

BINDING_BETA = "thinking-binding-controls-2026-08-01"
VERTEX_VERSION = "vertex-2023-10-16"
_ID = re.compile(r"claude-(?:(?P<family>[a-z]+)-(?P<major>\d+)(?:-(?P<minor>\d{1,2}))?"
                 r"|(?P<omajor>\d+)(?:-(?P<ominor>\d))?-(?P<ofamily>[a-z]+))(?:$|-)")


@dataclass(frozen=True, slots=True)
class Rejection:
    status: int
    body: Any


def error(message: str, status: int = 400, kind: str = "invalid_request_error") -> Rejection:
    """Anthropic's error envelope (recorded: errors/anthropic-400-unsupported-effort-level)."""
    return Rejection(status, {"type": "error", "error": {"type": kind, "message": message}})


def model_key(model: str) -> str:
    """One model's id across platforms: region and vendor prefixes, dates and -v1:0 removed."""
    name = model.lower().rsplit("/", 1)[-1]
    for prefix in ("us.", "eu.", "global.", "apac.", "anthropic."):
        name = name.removeprefix(prefix)
    name = re.sub(r"-v\d+(:\d+)?$", "", name)
    name = re.sub(r"(@|-)(\d{8}|latest)$", "", name)
    return name.replace(".", "-")


def version(model: str) -> tuple[str, int, int] | None:
    found = _ID.match(model_key(model))
    if found is None:
        return None
    if found["family"]:
        return found["family"], int(found["major"]), int(found["minor"] or 0)
    return found["ofamily"], int(found["omajor"]), int(found["ominor"] or 0)


def binds(model: str) -> bool:
    """Preserved-thinking models (preserved-thinking page, supportedModels): Fable/Mythos 5.1+,
    Opus/Sonnet/Haiku 5.5+."""
    v = version(model)
    if v is None:
        return False
    family, major, minor = v
    floor = (5, 1) if family in ("fable", "mythos") else (5, 5)
    return family in ("fable", "mythos", "opus", "sonnet", "haiku") and (major, minor) >= floor


def account_bound(model: str) -> bool:
    v = version(model)
    return v is not None and v[0] in ("sonnet", "haiku") and v[1:] >= (5, 5)


def adaptive_only(model: str) -> bool:
    """Opus 4.7+, Sonnet 5+, Fable, Mythos: ``disabled`` and manual budgets return 400
    (docs.aws.amazon.com/bedrock/latest/userguide/claude-messages-adaptive-thinking.html)."""
    v = version(model)
    if v is None:
        return False
    family, major, minor = v
    if family == "opus":
        return (major, minor) >= (4, 7)
    if family == "haiku":
        return False
    return major >= 5


def reads(target: str, origin: str, *, claude_api: bool = True) -> bool:
    """The model check (preserved-thinking page): same model; Fable 5.1 reads Opus 5 (and Opus 5.5
    on the Claude API); Haiku 5.5 blocks replay anywhere but Haiku 5.5 reads only its own."""
    if model_key(target) == model_key(origin):
        return True
    to, made = version(target), version(origin)
    if to is None or made is None:
        return False
    if to[0] == "haiku" and to[1:] >= (5, 5):
        return False
    if made[0] == "haiku" and made[1:] >= (5, 5):
        return True
    if to[0] == "fable" and to[1:] >= (5, 1) and made[0] == "opus":
        return made[1:] == (5, 0) or (claude_api and made[1:] == (5, 5))
    return False


def check_request(body: Mapping[str, Any], headers: Mapping[str, str], *, vertex: bool,
                  model: str, version_header: bool) -> Rejection | None:
    """Shape and parameter checks, in the order the API reports them."""
    if vertex:
        if body.get("anthropic_version") != VERTEX_VERSION:
            return error(f"anthropic_version: Input should be '{VERTEX_VERSION}'")
        if "model" in body:
            return error("model: Extra inputs are not permitted")
    elif not isinstance(body.get("model"), str):
        return error("model: Field required")
    if version_header and not headers.get("anthropic-version"):
        return error("anthropic-version: header is required")
    if not isinstance(body.get("max_tokens"), int):
        return error("max_tokens: Field required")
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        return error("messages: Field required")
    return _check_thinking(body, headers, model)


def _check_thinking(body: Mapping[str, Any], headers: Mapping[str, str],
                    model: str) -> Rejection | None:
    thinking = body.get("thinking")
    if not isinstance(thinking, Mapping):
        return None
    kind = thinking.get("type")
    if adaptive_only(model) and kind in ("disabled", "enabled"):
        # Opus 5.5 wording (a dev.to report, reproduced live 2026-10-06; no primary source).
        return error(f'"thinking.type.{kind}" is not supported for this model. Use '
                     '"thinking.type.adaptive" and "output_config.effort" to control thinking '
                     'behavior.')
    if kind == "enabled" and not isinstance(thinking.get("budget_tokens"), int):
        return error("thinking.enabled.budget_tokens: Field required")
    binding = thinking.get("block_binding")
    if binding is not None:
        behavior = binding.get("prefix_mismatch_behavior") if isinstance(binding, Mapping) else None
        if behavior not in ("error", "drop_block"):
            return error("thinking.block_binding.prefix_mismatch_behavior: Input should be "
                         "'error' or 'drop_block'")
        if BINDING_BETA not in headers.get("anthropic-beta", ""):
            return error("thinking.block_binding: That setting requires the "
                         f"`{BINDING_BETA}` value in the `anthropic-beta` header.")
    return None


def thinking_enabled(body: Mapping[str, Any], model: str) -> bool:
    thinking = body.get("thinking")
    if isinstance(thinking, Mapping):
        return thinking.get("type") != "disabled"
    return adaptive_only(model)  # these models always think
