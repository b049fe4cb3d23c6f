"""An agent on the official ``openai`` SDK's ``client.responses`` that talks to the gateway's
``/v1/responses`` face the way Codex does: stateless (``store: false``, encrypted reasoning
asked for), the whole history as ``input`` every time, every output item sent back as received
(reasoning with ``content: null``, function calls with their ids), its own tool run and answered
with a ``function_call_output``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import openai
from gateway_support import tool_output

RESPONSES_TOOLS = [{"type": "function", "name": "weather",
                    "description": "Current weather for a city",
                    "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                                   "required": ["city"]}},
                   {"type": "web_search"}]
SESSION_HEADER = "X-Thoughtline-Session"


def responses_client(origin: str, token: str = "none", **kwargs: Any) -> openai.OpenAI:
    return openai.OpenAI(base_url=origin + "/v1", api_key=token, max_retries=0, **kwargs)


def item_json(item: Any) -> dict[str, Any]:
    """An output item as Codex keeps and resends it (``content: null`` on reasoning kept)."""
    out = {k: v for k, v in item.model_dump(mode="json").items() if v is not None}
    if out.get("type") == "reasoning":
        out["content"] = None
    return out


@dataclass
class ResponsesAgent:
    """Runs a tool loop through ``/v1/responses``; resends each answer's items as received."""

    client: openai.OpenAI
    model: str
    input: list[dict[str, Any]] = field(default_factory=list)
    answers: list[list[dict[str, Any]]] = field(default_factory=list)
    session: str = ""
    headers: dict[str, str] = field(default_factory=dict)

    def ask(self, text: str) -> None:
        self.input.append({"type": "message", "role": "user",
                           "content": [{"type": "input_text", "text": text}]})

    def step(self, *, stream: bool) -> list[dict[str, Any]]:
        """One request; appends the answer's items (and a tool output when it called one)."""
        output = self._stream() if stream else self._whole()
        self.answers.append(output)
        self.input.extend(output)
        for item in output:
            if item["type"] == "function_call":
                self.input.append({"type": "function_call_output", "call_id": item["call_id"],
                                   "output": tool_output(item["arguments"])})
        return output

    def _args(self) -> dict[str, Any]:
        return {"model": self.model, "input": self.input, "tools": RESPONSES_TOOLS,
                "store": False, "include": ["reasoning.encrypted_content"],
                "reasoning": {"effort": "medium", "summary": "auto"},
                "extra_headers": self.headers}

    def _whole(self) -> list[dict[str, Any]]:
        raw = self.client.responses.with_raw_response.create(**self._args())
        self.session = raw.headers.get(SESSION_HEADER, "")
        return [item_json(i) for i in raw.parse().output]

    def _stream(self) -> list[dict[str, Any]]:
        with self.client.responses.stream(**self._args()) as events:
            final = events.get_final_response()
            self.session = events._response.headers.get(SESSION_HEADER, "")
        return [item_json(i) for i in final.output]

    def summaries(self) -> list[str]:
        """The readable reasoning each answer showed (its reasoning items' summaries)."""
        return ["".join(s["text"] for i in output if i["type"] == "reasoning"
                        for s in i.get("summary", ())) for output in self.answers]
