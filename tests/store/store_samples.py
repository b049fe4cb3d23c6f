"""Rich sample messages and hypothesis strategies for the store tests."""

from __future__ import annotations

import base64
import hashlib
from typing import Any

from hypothesis import strategies as st

from thoughtline.messages import (
    Message,
    Origin,
    Reasoning,
    Text,
    ToolCall,
    ToolResult,
    dumps,
    tool_results,
    user,
)

ANTHROPIC = Origin(api="anthropic", provider="anthropic", host="api.anthropic.com",
                   model="claude-sonnet-4")
GEMINI = Origin(api="gemini", provider="gemini", host="generativelanguage.googleapis.com",
                model="gemini-2.5-pro")


def opaque(seed: str, size: int = 3000) -> str:
    """A long, deterministic base64 string (with padding), like a real signature."""
    raw = b"".join(hashlib.sha256(f"{seed}{i}".encode()).digest() for i in range(size // 32 + 1))
    return base64.b64encode(raw[: size - 1]).decode("ascii")


def signed_turn() -> Message:
    """Interleaved signed thinking → tool call → redacted thinking → tool call, plus natives."""
    return Message(role="assistant", origin=ANTHROPIC, parts=(
        Reasoning(kind="signed", text="Let me think… 思考 🤔 about \"quotes\"\n",
                  signature=opaque("sig1"), origin=ANTHROPIC),
        ToolCall(id="toolu_01", name="search", arguments='{"q":  "x", "n": 1.50}'),
        Reasoning(kind="redacted", data=opaque("red1", 5000), origin=ANTHROPIC),
        ToolCall(id="toolu_02", name="fetch", arguments="{}",
                 native={"google": {"thoughtSignature": opaque("ts", 800)}}),
    ))


def gemini_turn() -> Message:
    """Message-level and part-level natives with floats, nesting and key order to keep."""
    details: dict[str, Any] = {"openrouter": [
        {"type": "reasoning.encrypted", "data": opaque("enc", 1200), "format": "google-gemini-v1",
         "index": 0, "id": None},
        {"type": "reasoning.text", "text": "ünïcödé ✓", "z": 1, "a": 2, "score": 0.1 + 0.2,
         "big": 2**62, "neg": -1e-300, "nested": {"b": [True, False, None]}},
    ]}
    return Message(role="assistant", origin=GEMINI, native={"google": {"sig": opaque("msg", 400)}},
                   parts=(
        Reasoning(kind="encrypted", summary="Summary **md**", data=opaque("d2", 64),
                  complete=False, origin=GEMINI, native=details),
        Reasoning(kind="text", text="", origin=None),
        Reasoning(kind="signed", signature="", text="empty signature kept"),
        Text(text="Answer: 42\u2028line\x00nul"),
    ))


def rich_history() -> list[Message]:
    return [
        Message(role="system", parts=(Text(text="be brief"),)),
        user("héllo — 你好"),
        signed_turn(),
        tool_results([ToolResult(call_id="toolu_01", content="result ☃"),
                      ToolResult(call_id="toolu_02", content="boom", is_error=True)]),
        gemini_turn(),
        Message(role="assistant", incomplete=True, parts=(Text(text="cut off"),)),
    ]


def canonical(messages: list[Message]) -> list[bytes]:
    return [dumps(m) for m in messages]


# --- hypothesis ---------------------------------------------------------------------------------

_json_scalar = (st.none() | st.booleans()
                | st.integers(min_value=-(2**63), max_value=2**63 - 1)
                | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=20))
json_values = st.recursive(
    _json_scalar,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner,
                                                                max_size=3),
    max_leaves=8)
natives = st.dictionaries(st.sampled_from(["google", "openrouter", "copilot", "x"]), json_values,
                          max_size=2)
origins = st.none() | st.builds(Origin, api=st.sampled_from(["anthropic", "gemini"]),
                                provider=st.text(max_size=5), host=st.text(max_size=5),
                                model=st.text(max_size=5))
opt_text = st.none() | st.text(max_size=40)

parts = st.one_of(
    st.builds(Text, text=st.text(max_size=40)),
    st.builds(Reasoning, kind=st.sampled_from(["text", "summary", "signed", "redacted",
                                               "encrypted"]),
              text=opt_text, summary=opt_text, signature=opt_text, data=opt_text,
              complete=st.booleans(), origin=origins, native=natives),
    st.builds(ToolCall, id=st.text(max_size=8), name=st.text(max_size=8),
              arguments=st.text(max_size=30), native=natives),
    st.builds(ToolResult, call_id=st.text(max_size=8), content=st.text(max_size=30),
              is_error=st.booleans()),
)
messages = st.builds(Message, role=st.sampled_from(["system", "user", "assistant", "tool"]),
                     parts=st.lists(parts, max_size=4).map(tuple), origin=origins,
                     incomplete=st.booleans(), native=natives)
histories = st.lists(messages, min_size=0, max_size=5)
