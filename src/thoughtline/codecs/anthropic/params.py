"""Thinking parameters: adaptive vs manual thinking, effort, and the usage errors caught before
a request is sent.

Facts (platform.claude.com adaptive-thinking docs;
docs.aws.amazon.com/bedrock/latest/userguide/claude-messages-adaptive-thinking.html): adaptive
models take ``{"type": "adaptive"}`` plus ``output_config.effort`` and interleave by themselves;
manual models take ``{"type": "enabled", "budget_tokens": N}`` (the interleaved beta on Claude 4 /
4.1 is a header, see ``codec.endpoint``); Opus 4.7+, Sonnet 5+, Fable and Mythos return 400 on
``disabled`` and on manual budgets; thinking is incompatible with a changed ``temperature``,
``top_k`` and a forced ``tool_choice`` (Fable 5.1's migration guide names the last one). A request
one of those would reject is a ``UsageError`` here, not a 400 there.

``RequestSpec.params`` keys read here: ``reasoning_effort`` (low | medium | high | xhigh | max),
``thinking`` ("adaptive" | "enabled" | "disabled", or a verbatim object), ``thinking_budget``,
``max_tokens``, ``prefix_mismatch_behavior`` (also a per-session setting); every other key goes
into the body as given.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from thoughtline.codecs.anthropic import models
from thoughtline.codecs.anthropic.wire import EFFORTS, MISMATCH_BEHAVIORS, SETTING_MISMATCH
from thoughtline.errors import UsageError

#: ``--reasoning-effort`` on a manual-thinking model: a thinking budget per level.
MANUAL_BUDGETS = {"low": 2048, "medium": 8192, "high": 16384, "xhigh": 24576, "max": 32768}
DEFAULT_MAX_TOKENS = 16384
_READ = frozenset({"reasoning_effort", "thinking", "thinking_budget", "max_tokens",
                   SETTING_MISMATCH})


def _effort(params: Mapping[str, Any], model: str) -> str | None:
    effort = params.get("reasoning_effort")
    if effort is None:
        return None
    if effort not in EFFORTS:
        raise UsageError(f"reasoning effort {effort!r} is not one of {', '.join(EFFORTS)}")
    parsed = models.parse(model)
    if effort == "xhigh" and parsed is not None and parsed.version < (4, 7):
        # Recorded: errors/anthropic-400-unsupported-effort-level (claude-opus-4-6).
        raise UsageError(f"{model} does not support effort level 'xhigh' (use low, medium, high "
                         "or max)")
    return str(effort)


def thinking_fields(model: str, params: Mapping[str, Any],
                    settings: Mapping[str, Any]) -> dict[str, Any]:
    """The thinking body fields for ``model``: ``thinking``, ``output_config``, ``max_tokens``."""
    requested = params.get("thinking")
    if isinstance(requested, Mapping):
        out: dict[str, Any] = {"thinking": dict(requested)}
        effort = _effort(params, model)
        if effort is not None:  # a client's own thinking object and its effort (the gateway)
            out["output_config"] = {"effort": effort}
    elif not models.is_claude(model):
        out = {"thinking": {"type": str(requested)}} if requested else {}
    else:
        out = _claude_thinking(model, requested, params)
    _check_constraints(model, out, params)
    max_tokens = params.get("max_tokens")
    budget = out.get("thinking", {}).get("budget_tokens", 0)
    if max_tokens is None:
        max_tokens = max(DEFAULT_MAX_TOKENS, budget + 8192)
    elif isinstance(budget, int) and budget and int(max_tokens) <= budget:
        raise UsageError(f"max_tokens ({max_tokens}) must exceed the thinking budget ({budget})")
    out["max_tokens"] = int(max_tokens)
    # The API does not remember it between requests
    # (platform.claude.com/docs/en/build-with-claude/preserved-thinking): the session stores it and
    # every request carries it. A learned setting wins over one given as a parameter.
    behavior = settings.get(SETTING_MISMATCH, params.get(SETTING_MISMATCH))
    if behavior is not None and models.binds_blocks(model) and "thinking" in out:
        if behavior not in MISMATCH_BEHAVIORS:
            raise UsageError(f"prefix_mismatch_behavior must be one of "
                             f"{', '.join(MISMATCH_BEHAVIORS)}, not {behavior!r}")
        out["thinking"] = {**out["thinking"],
                           "block_binding": {"prefix_mismatch_behavior": behavior}}
    return out


def _claude_thinking(model: str, requested: Any, params: Mapping[str, Any]) -> dict[str, Any]:
    style = models.thinking_style(model)
    effort = _effort(params, model)
    budget = params.get("thinking_budget")
    if requested == "disabled":
        if style == "adaptive-only":
            raise UsageError(f"{model} does not accept disabled thinking: it always thinks "
                             "adaptively; lower --reasoning-effort instead")
        return {"thinking": {"type": "disabled"}} if style != "none" else {}
    if requested == "enabled" or budget is not None or style == "manual":
        if style == "adaptive-only":
            raise UsageError(f"{model} rejects manual thinking budgets: it thinks adaptively; "
                             "use --reasoning-effort instead")
        if style == "none":
            raise UsageError(f"{model} has no extended thinking")
        tokens = int(budget) if budget is not None else MANUAL_BUDGETS[effort or "medium"]
        return {"thinking": {"type": "enabled", "budget_tokens": tokens}}
    if requested not in (None, "adaptive"):
        raise UsageError(f"thinking must be adaptive, enabled or disabled, not {requested!r}")
    if style == "none":
        return {}
    out: dict[str, Any] = {"thinking": {"type": "adaptive"}}
    if effort is not None:
        out["output_config"] = {"effort": effort}
    return out


def _check_constraints(model: str, out: Mapping[str, Any], params: Mapping[str, Any]) -> None:
    thinking = out.get("thinking", {})
    if not thinking or thinking.get("type") == "disabled" or not models.is_claude(model):
        return
    temperature = params.get("temperature")
    if temperature is not None and temperature != 1:
        raise UsageError("thinking requires temperature 1 (or none): drop the temperature "
                         "parameter or disable thinking")
    if params.get("top_k") is not None:
        raise UsageError("thinking is incompatible with top_k")
    choice = params.get("tool_choice")
    kind = choice.get("type") if isinstance(choice, Mapping) else choice
    if kind in ("any", "tool"):
        raise UsageError(f"{model} rejects a forced tool_choice ({kind!r}) while thinking; "
                         "use auto or none")


def passthrough(params: Mapping[str, Any]) -> dict[str, Any]:
    """Every parameter this module does not interpret, as given."""
    return {k: v for k, v in params.items() if k not in _READ}
