"""An agent on the official ``anthropic`` SDK that talks to the gateway's ``/v1/messages`` face.

It behaves as Claude Code does: every answer's content blocks go back on the next request as
the SDK returned them (thinking with its signature, redacted thinking, tool uses), in order; its
own tool runs and answers with a ``tool_result``. Optional knobs mimic the client's other habits:
sending thinking back with ``"signature": ""``, or dropping thinking blocks altogether.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from gateway_support import tool_output

import anthropic

MESSAGES_TOOLS = [{"name": "weather", "description": "Current weather for a city",
                   "input_schema": {"type": "object",
                                    "properties": {"city": {"type": "string"}},
                                    "required": ["city"]}}]
SESSION_HEADER = "X-Thoughtline-Session"


def messages_client(origin: str, token: str = "none", **kwargs: Any) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=origin, api_key=token, max_retries=0, **kwargs)


def block_json(block: Any) -> dict[str, Any]:
    """A content block as the client stores and resends it."""
    return {k: v for k, v in block.model_dump(mode="json").items() if v is not None}


@dataclass
class MessagesAgent:
    """Runs a tool loop through ``/v1/messages``; resends each answer's blocks as received."""

    client: anthropic.Anthropic
    model: str
    messages: list[dict[str, Any]] = field(default_factory=list)
    answers: list[list[dict[str, Any]]] = field(default_factory=list)  # content, as received
    session: str = ""
    headers: dict[str, str] = field(default_factory=dict)
    #: Applied to each answer's blocks before they are resent (Claude Code's habits).
    resend: Callable[[list[dict[str, Any]]], list[dict[str, Any]]] = list

    def ask(self, text: str) -> None:
        self.messages.append({"role": "user", "content": text})

    def step(self, *, stream: bool) -> list[dict[str, Any]]:
        """One request; appends the answer (and a tool result when it called a tool)."""
        content = self._stream() if stream else self._whole()
        self.answers.append(content)
        self.messages.append({"role": "assistant", "content": self.resend(content)})
        results = [{"type": "tool_result", "tool_use_id": b["id"],
                    "content": tool_output(_arguments(b["input"]))}
                   for b in content if b["type"] == "tool_use"]
        if results:
            self.messages.append({"role": "user", "content": results})
        return content

    def _args(self) -> dict[str, Any]:
        return {"model": self.model, "max_tokens": 16000, "messages": self.messages,
                "tools": MESSAGES_TOOLS, "extra_headers": self.headers}

    def _whole(self) -> list[dict[str, Any]]:
        raw = self.client.messages.with_raw_response.create(**self._args())
        self.session = raw.headers.get(SESSION_HEADER, "")
        return [block_json(b) for b in raw.parse().content]

    def _stream(self) -> list[dict[str, Any]]:
        with self.client.messages.stream(**self._args()) as events:
            final = events.get_final_message()
            self.session = events.response.headers.get(SESSION_HEADER, "")
        return [block_json(b) for b in final.content]

    def thoughts(self) -> list[str]:
        """The thinking text each answer showed (joined per answer)."""
        return ["".join(b.get("thinking", "") for b in content if b["type"] == "thinking")
                for content in self.answers]


def _arguments(value: Any) -> str:
    import orjson

    return orjson.dumps(value).decode()


def unsigned(blocks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Claude Code's resend of thinking it could not keep signed: ``"signature": ""``."""
    return [{**b, "signature": ""} if b["type"] == "thinking" else b for b in blocks]


def without_thinking(blocks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Claude Code after a signature 400: every thinking block removed."""
    return [b for b in blocks if b["type"] not in ("thinking", "redacted_thinking")]
