"""Claude model facts as the Anthropic codec uses them.

The ids and the per-model facts (thinking configuration, prior-thinking floors, block and account
binding) live in ``thoughtline.codecs.claude`` and its table ``routes/claude-models.toml``, shared
with the Bedrock Converse codec; this module names them for the Anthropic side and adds the model
check of preserved thinking (which model reads which model's blocks,
platform.claude.com/docs/en/build-with-claude/preserved-thinking). An id that names Claude but does
not parse is kept permissively (the contracts say so).
"""

from __future__ import annotations

from thoughtline.codecs.claude import (
    ClaudeModel,
    ThinkingStyle,
    account_bound,
    binds_blocks,
    interleaving_beta,
    is_claude,
    keeps_prior_thinking,
    normalize,
    parse,
    thinking_style,
)

__all__ = [
    "ClaudeModel",
    "ThinkingStyle",
    "account_bound",
    "binds_blocks",
    "interleaving_beta",
    "is_claude",
    "keeps_prior_thinking",
    "normalize",
    "parse",
    "reads",
    "thinking_style",
]


def reads(target: str, origin: str, *, claude_api: bool) -> bool:
    """The model check (preserved-thinking page): can ``target`` read a thinking block ``origin``
    made?

    The same model always can. Fable 5.1 also reads Opus 5 blocks, and Opus 5.5 blocks on the
    Claude API; Haiku 5.5 blocks are not model-locked (Bedrock binding page), but Haiku 5.5 itself
    drops every foreign block. Anything else counts as a different model (a signature check fails
    for blocks from a different model, the extended-thinking page).
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

