"""Provider error wordings every API shares: the row type, a lazily compiled pattern, the undoing
of nested JSON escapes, and the "context length exceeded" rows.

A rejected request's body is provider *text*; matching it is the job of one table per concern.
Each API's own rejection reader (``codecs/<api>/rejections.py``) keeps its wordings beside its
codec; what is API-neutral lives here: ``OVERFLOW_WORDINGS``, read by ``overflowed``, recognises
"the conversation no longer fits the model's context window" on every API (such a rejection
teaches replay nothing, but lets automatic compaction compact once and retry once), and
``readable`` undoes the JSON string escapes a relay adds when it wraps a body (OpenRouter's
``metadata.raw``) so a nested wording reads plainly.

Pure: no I/O, no state beyond each pattern's compiled form.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True, kw_only=True, slots=True)
class Wording:
    """One provider error wording: what it means, where it was seen, how it reads in a notice.

    ``kind`` is what the wording means to the reader that owns its table (``context_length``
    here; ``unknown_field``, ``reasoning_required`` … for the Chat rejection reader).
    """

    id: str
    kind: str
    pattern: LazyPattern
    seen: str
    source: str
    label: tuple[str, str] = ("", "")  # unknown_field: "rejected replayed X as <one|many>"


class LazyPattern:
    """A case-insensitive regex compiled on its first use: these tables are read only when a
    request was rejected, and compiling them all cost every process (every resume) ~2 ms."""

    __slots__ = ("_compiled", "source")

    def __init__(self, source: str) -> None:
        self.source = source
        self._compiled: re.Pattern[str] | None = None

    def search(self, text: str) -> re.Match[str] | None:
        if self._compiled is None:
            self._compiled = re.compile(self.source, re.IGNORECASE)
        return self._compiled.search(text)


_rx = LazyPattern


_ESCAPE = re.compile(r"\\(u[0-9a-fA-F]{4}|[\"\\/'bfnrt])")
_SIMPLE_ESCAPES = {"b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}
_MAX_UNESCAPE = 4  # OpenRouter nests once; a logged or re-wrapped body adds a level or two


def _unescape_once(text: str) -> str:
    def sub(m: re.Match[str]) -> str:
        esc = m.group(1)
        if esc[0] == "u":
            return chr(int(esc[1:], 16))
        return _SIMPLE_ESCAPES.get(esc, esc)

    return _ESCAPE.sub(sub, text)


def readable(body: str) -> str:
    """The body with JSON string escapes undone, level by level, so nested wordings read plainly."""
    for _ in range(_MAX_UNESCAPE):
        flat = _unescape_once(body)
        if flat == body:
            break
        body = flat
    return body



# --- "the request is over the context window": compact once and retry once ------------------
# Read by ``overflowed`` only (the Chat rejection reader never sees these rows): the request was
# fine, the conversation is too long for the model. Each API's own wording, as users pasted it.
OVERFLOW_WORDINGS: tuple[Wording, ...] = (
    Wording(
        id="anthropic-prompt-is-too-long", kind="context_length",
        pattern=_rx(r"prompt\s+is\s+too\s+long:\s*\d+\s+tokens\s*>\s*\d+\s+maximum"),
        seen="anthropic messages (400 invalid_request_error); bedrock and vertex claude relay it",
        source="earendil-works/pi#102, boldsoftware/exe.dev#62 (400 bodies, Opus 4.5); "
               "daisuke-awaji/moca#254 (Bedrock ValidationException wrapping it)"),
    Wording(
        id="anthropic-input-and-max-tokens-exceed", kind="context_length",
        pattern=_rx(r"input\s+length\s+and\s+[`'\"]?max_tokens[`'\"]?\s+exceed\s+context\s+"
                    r"limit"),
        seen="anthropic messages (400 invalid_request_error)",
        source="anthropics/claude-code#408, continuedev/continue#6080"),
    Wording(
        id="openai-context-length-exceeded", kind="context_length",
        pattern=_rx(r"\bcontext_length_exceeded\b|your\s+input\s+exceeds\s+the\s+context\s+"
                    r"window\s+of\s+this\s+model"),
        seen="openai responses and chat completions (code context_length_exceeded)",
        source="dyad-sh/dyad#1672, james-6-23/codex2api#415, onyx-dot-app/onyx#6051"),
    Wording(
        id="maximum-context-length-is", kind="context_length",
        pattern=_rx(r"maximum\s+context\s+length\s+is\s+\d+\s+tokens"),
        seen="openai chat completions, vllm, openrouter ('This endpoint's maximum context "
             "length is N tokens. However, you requested about M tokens')",
        source="refly-ai/refly#1177 (openrouter)"),
    Wording(
        id="gemini-input-token-count-exceeds", kind="context_length",
        pattern=_rx(r"input\s+token\s+count\s*\(\d+\)\s+exceeds\s+the\s+maximum\s+number\s+"
                    r"of\s+tokens\s+allowed"),
        seen="gemini (400 INVALID_ARGUMENT)",
        source="google-gemini/gemini-cli#4231, #6678, #4118"),
    Wording(
        id="bedrock-input-is-too-long", kind="context_length",
        pattern=_rx(r"input\s+is\s+too\s+long\s+for\s+requested\s+model"),
        seen="bedrock converse (400 ValidationException)",
        source="aws-samples/assessment-generator#2 (400 ValidationException), "
               "continuedev/continue#9592, aaif-goose/goose#7504 (both Bedrock variants)"),
)


def overflowed(status: int | None, body: str) -> Wording | None:
    """The ``OVERFLOW_WORDINGS`` row a rejected request's body matches: the conversation no
    longer fits the model's context window (a 4xx, or no status; None otherwise)."""
    if status is not None and not 400 <= status <= 499:
        return None
    text = readable(body)
    return next((w for w in OVERFLOW_WORDINGS if w.pattern.search(text)), None)
