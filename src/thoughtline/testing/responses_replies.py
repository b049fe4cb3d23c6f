"""What the Responses emulator answers: output items, the whole response, and its event stream.

Owns the reply shape, modelled on the recordings in tests/fixtures/openai-responses
(pydantic-ai-openai-responses-gpt55-phase*, vercel openai-reasoning-encrypted-content): a
reasoning item with a summary and sealed ``encrypted_content``, then (for a tool call) a
``commentary`` message and the ``function_call``, or a ``final_answer`` message. Streams send
``event:`` lines with ``sequence_number``s; ``output_item.added`` carries a *partial*
encrypted_content ("may be incomplete", developers.openai.com/api/docs/guides/reasoning) and
``response.completed`` carries a freshly re-sealed one, as OpenAI's recordings do: only the
``output_item.done`` value is the item to keep (both verify). What to say comes from
``script.plan_turn``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import Any

import orjson

from thoughtline.testing.responses_sealing import Sealer
from thoughtline.testing.script import TurnPlan, plan_turn

#: A custom (free-text) tool as the script sees it: one string. Custom tools, namespaces and
#: ``additional_tools`` items: the ``openai`` SDK's types (``custom_tool_param``,
#: ``namespace_tool_param``, ``response_input_item_param.AdditionalTools``) and the recording
#: ``clients/codex_lite_run1`` (a ``custom_tool_call`` answered by ``custom_tool_call_output``).
_ONE_STRING = {"type": "object", "properties": {"input": {"type": "string"}},
               "required": ["input"]}


def offered_tools(body: Mapping[str, Any]) -> dict[str, tuple[str, str, Any]]:
    """Every callable tool the request offers — top-level ``tools`` and each
    ``additional_tools`` input item's — as view name → (namespace, type, JSON Schema)."""
    lists = [body.get("tools") or []]
    lists += [item.get("tools") or [] for item in body.get("input") or ()
              if isinstance(item, Mapping) and item.get("type") == "additional_tools"]
    out: dict[str, tuple[str, str, Any]] = {}
    for tools in lists:
        for tool in tools:
            if not isinstance(tool, Mapping):
                continue
            members = tool.get("tools") if tool.get("type") == "namespace" else [tool]
            for member in members or ():
                kind = member.get("type") if isinstance(member, Mapping) else None
                if kind in ("function", "custom"):
                    namespace = str(tool.get("name", "")) if member is not tool else ""
                    schema = _ONE_STRING if kind == "custom" else member.get("parameters")
                    out[str(member.get("name", ""))] = (namespace, kind, schema)
    return out


def _output_text(output: Any) -> str:
    if isinstance(output, list):  # input_text parts (a custom tool's output)
        return "\n".join(str(p.get("text", "")) for p in output if isinstance(p, Mapping))
    return str(output if output is not None else "")


def _chat_view(body: Mapping[str, Any]) -> dict[str, Any]:
    """The request seen as the chat script reads one (messages, tools) — the script is shared."""
    messages: list[dict[str, Any]] = []
    for item in body.get("input") or ():
        if not isinstance(item, Mapping):
            continue
        kind, role = item.get("type"), item.get("role")
        if kind in ("function_call_output", "custom_tool_call_output"):
            messages.append({"role": "tool", "tool_call_id": item.get("call_id"),
                             "content": _output_text(item.get("output"))})
        elif kind in ("function_call", "custom_tool_call"):
            messages.append({"role": "assistant", "tool_calls": [{
                "id": item.get("call_id"), "function": {"name": item.get("name")}}]})
        elif kind != "additional_tools" and role in ("user", "system", "developer",
                                                     "assistant"):
            content = item.get("content")
            if isinstance(content, list):
                content = "".join(str(p.get("text", "")) for p in content
                                  if isinstance(p, Mapping))
            messages.append({"role": role, "content": content or ""})
    tools = [{"type": "function", "function": {"name": name, "parameters": schema}}
             for name, (_, _, schema) in offered_tools(body).items()]
    return {"messages": messages, "tools": tools}


def _call_item(body: Mapping[str, Any], call: Any, item_id: str) -> dict[str, Any]:
    """The planned call as the tool's kind is called: a ``function_call``, or a
    ``custom_tool_call`` with the free text; ``namespace`` when the tool is in one."""
    namespace, kind, _ = offered_tools(body).get(call.name, ("", "function", None))
    if kind == "custom":
        found = orjson.loads(call.arguments or "{}")
        item = {"id": "ctc_" + item_id[3:], "type": "custom_tool_call", "status": "completed",
                "call_id": call.id, "name": call.name,
                "input": str(found.get("input", "")) if isinstance(found, dict) else ""}
    else:
        item = {"id": item_id, "type": "function_call", "status": "completed",
                "arguments": call.arguments, "call_id": call.id, "name": call.name}
    if namespace:
        item["namespace"] = namespace
    return item


def _ids(digest: str) -> dict[str, str]:
    return {name: f"{name}_{hashlib.sha256((name + digest).encode()).hexdigest()[:24]}"
            for name in ("resp", "rs", "msg", "fc")}


def build_output(body: Mapping[str, Any], sealer: Sealer, *, phase: bool,
                 encrypted: bool = True, reference: bool = False,
                 ) -> tuple[TurnPlan, list[dict[str, Any]], dict[str, str]]:
    """The planned turn, its output items (with sealed reasoning) and their ids. A request
    ending in ``compaction_trigger`` gets exactly one sealed ``compaction`` item
    (developers.openai.com/api/docs/guides/compaction: opaque, readable only by the provider that
    made it)."""
    plan = plan_turn(_chat_view(body))
    ids = _ids(plan.request_digest)
    items = body.get("input") or [None]
    if isinstance(items[-1], Mapping) and items[-1].get("type") == "compaction_trigger":
        compaction = {"id": "cmp_" + ids["rs"][3:], "type": "compaction",
                      "encrypted_content": sealer.seal({"compaction": plan.request_digest})}
        return plan, [compaction], ids
    call = plan.tool_call
    text = f"I'll call the {call.name} tool." if call is not None else plan.content
    message: dict[str, Any] = {"id": ids["msg"], "type": "message", "status": "completed",
                               "content": [{"type": "output_text", "annotations": [],
                                            "logprobs": [], "text": text}]}
    if phase:
        message["phase"] = "commentary" if call is not None else "final_answer"
    message["role"] = "assistant"
    sealed = sealer.seal({"reasoning": plan.reasoning, "next": ids["msg"]})
    reasoning = {"id": ids["rs"], "type": "reasoning", "content": [],
                 "encrypted_content": sealed,
                 "summary": [{"type": "summary_text", "text": plan.reasoning}]}
    if not encrypted:  # a relay without encryption: the reasoning itself, readable
        reasoning = {"id": ids["rs"], "type": "reasoning", "summary": [],
                     "content": [{"type": "reasoning_text", "text": plan.reasoning}]}
    if not encrypted and reference:
        # DeepSeek's shape, key for key (pydantic-ai-deepseek-responses-replay-reasoning):
        # the encrypted_content is "<response id>-<output index>", not a sealed value
        reasoning = {"content": [{"text": plan.reasoning, "type": "reasoning_text"}],
                     "encrypted_content": f"{ids['resp']}-0", "id": ids["rs"],
                     "status": "completed", "summary": [], "type": "reasoning"}
    output: list[dict[str, Any]] = [reasoning, message]
    if call is not None:
        output.append(_call_item(body, call, ids["fc"]))
    return plan, output, ids


def response_body(body: Mapping[str, Any], model: str, output: Sequence[Mapping[str, Any]],
                  ids: Mapping[str, str], plan: TurnPlan, prompt_bytes: int) -> dict[str, Any]:
    reasoning_tokens = max(1, len(plan.reasoning) // 4)
    output_tokens = reasoning_tokens + sum(len(orjson.dumps(i)) for i in output[1:]) // 4
    return {"id": ids["resp"], "object": "response", "created_at": 1785273853,
            "status": "completed", "error": None, "incomplete_details": None, "model": model,
            "output": list(output), "store": body.get("store", True) is not False,
            "reasoning": dict(body.get("reasoning") or {}),
            "usage": {"input_tokens": prompt_bytes // 4,
                      "input_tokens_details": {"cached_tokens": 0},
                      "output_tokens": output_tokens,
                      "output_tokens_details": {"reasoning_tokens": reasoning_tokens},
                      "total_tokens": prompt_bytes // 4 + output_tokens}}


def _pieces(text: str, size: int = 12) -> list[str]:
    return [text[i:i + size] for i in range(0, len(text), size)] or [""]


def _item_events(index: int, item: Mapping[str, Any]) -> list[dict[str, Any]]:
    kind = item["type"]
    added = dict(item)
    events: list[dict[str, Any]] = []
    readable = kind == "reasoning" and bool(item.get("content"))
    if readable:
        added.update(content=[])
    elif kind == "reasoning":
        value = item["encrypted_content"]
        added.update(summary=[], encrypted_content=value[: len(value) // 2])
    elif kind == "message":
        added.update(content=[], status="in_progress")
    elif kind == "function_call":
        added.update(arguments="", status="in_progress")
    elif kind == "custom_tool_call":
        added.update(input="")
    events.append({"type": "response.output_item.added", "output_index": index, "item": added})
    base = {"item_id": item["id"], "output_index": index}
    if readable:
        text = item["content"][0]["text"]
        events.extend({"type": "response.reasoning_text.delta", **base, "content_index": 0,
                       "delta": piece} for piece in _pieces(text))
        events.append({"type": "response.reasoning_text.done", **base, "content_index": 0,
                       "text": text})
    elif kind == "reasoning":
        text = item["summary"][0]["text"]
        events.append({"type": "response.reasoning_summary_part.added", **base,
                       "summary_index": 0, "part": {"type": "summary_text", "text": ""}})
        events.extend({"type": "response.reasoning_summary_text.delta", **base,
                       "summary_index": 0, "delta": piece} for piece in _pieces(text))
        events.append({"type": "response.reasoning_summary_text.done", **base,
                       "summary_index": 0, "text": text})
    elif kind == "message":
        part = item["content"][0]
        events.append({"type": "response.content_part.added", **base, "content_index": 0,
                       "part": {**part, "text": ""}})
        events.extend({"type": "response.output_text.delta", **base, "content_index": 0,
                       "delta": piece, "logprobs": []} for piece in _pieces(part["text"]))
        events.append({"type": "response.output_text.done", **base, "content_index": 0,
                       "text": part["text"], "logprobs": []})
    elif kind == "function_call":
        events.extend({"type": "response.function_call_arguments.delta", **base,
                       "delta": piece} for piece in _pieces(item["arguments"]))
        events.append({"type": "response.function_call_arguments.done", **base,
                       "arguments": item["arguments"]})
    elif kind == "custom_tool_call":
        events.extend({"type": "response.custom_tool_call_input.delta", **base,
                       "delta": piece} for piece in _pieces(item["input"]))
        events.append({"type": "response.custom_tool_call_input.done", **base,
                       "input": item["input"]})
    # any other item (program, configuration_update, compaction …) arrives whole: added, done
    events.append({"type": "response.output_item.done", "output_index": index, "item": item})
    return events


def stream_events(response: Mapping[str, Any], sealer: Sealer) -> list[dict[str, Any]]:
    """The event sequence for ``response``, numbered."""
    start = {**response, "status": "in_progress", "output": [], "usage": None}
    events: list[dict[str, Any]] = [{"type": "response.created", "response": start},
                                    {"type": "response.in_progress", "response": start}]
    for index, item in enumerate(response["output"]):
        events.extend(_item_events(index, item))
    final_output = []
    for item in response["output"]:
        opened = sealer.open(item.get("encrypted_content"))
        if opened.verdict == "ok":  # re-sealed: a different, equally valid value
            item = {**item, "encrypted_content": sealer.seal(opened.plaintext or {})}
        final_output.append(item)
    events.append({"type": "response.completed", "response": {**response,
                                                              "output": final_output}})
    return [{**event, "sequence_number": n} for n, event in enumerate(events)]
