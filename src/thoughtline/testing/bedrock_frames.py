"""AWS event-stream frames for the Bedrock emulator, built by hand (the test side of the wire).

Owns the binary framing of ``application/vnd.amazon.eventstream``: a 12-byte prelude (total
length, headers length, CRC32 of those 8 bytes), string headers (name length, name, type 7,
value length, value), the payload, and a CRC32 of everything before it
(https://docs.aws.amazon.com/AmazonS3/latest/API/RESTSelectObjectAppendix.html, the same format
botocore's ``EventStreamBuffer`` parses). Also renders a whole Converse response as the
ConverseStream events that carry it, shaped like the recordings (reasoning text fragments, then a
separate ``signature`` delta; ``redactedContent`` in one delta; tool input as JSON fragments).

The client side never uses this module: it parses frames with botocore only.
"""

from __future__ import annotations

import binascii
import struct
from collections.abc import Iterator, Mapping
from typing import Any

import orjson

_STRING = 7


def _headers(headers: Mapping[str, str]) -> bytes:
    out = b""
    for name, value in headers.items():
        raw_name, raw_value = name.encode(), value.encode()
        out += bytes([len(raw_name)]) + raw_name + bytes([_STRING])
        out += struct.pack(">H", len(raw_value)) + raw_value
    return out


def frame(headers: Mapping[str, str], payload: bytes) -> bytes:
    """One event-stream message."""
    encoded = _headers(headers)
    total = 12 + len(encoded) + len(payload) + 4
    prelude = struct.pack(">II", total, len(encoded))
    prelude += struct.pack(">I", binascii.crc32(prelude))
    body = prelude + encoded + payload
    return body + struct.pack(">I", binascii.crc32(body))


def event_frame(event_type: str, payload: Any) -> bytes:
    return frame({":event-type": event_type, ":content-type": "application/json",
                  ":message-type": "event"}, orjson.dumps(payload))


def exception_frame(exception_type: str, message: str) -> bytes:
    return frame({":exception-type": exception_type, ":content-type": "application/json",
                  ":message-type": "exception"}, orjson.dumps({"message": message}))


def _pieces(text: str, size: int) -> Iterator[str]:
    for start in range(0, len(text), size):
        yield text[start:start + size]


def _block_events(index: int, block: Mapping[str, Any]) -> Iterator[tuple[str, Any]]:
    def delta(value: Any) -> tuple[str, Any]:
        return "contentBlockDelta", {"contentBlockIndex": index, "delta": value}

    if "toolUse" in block:
        use = block["toolUse"]
        yield "contentBlockStart", {"contentBlockIndex": index, "start": {"toolUse": {
            "toolUseId": use["toolUseId"], "name": use["name"]}}}
        for piece in _pieces(orjson.dumps(use["input"]).decode(), 9):
            yield delta({"toolUse": {"input": piece}})
    elif "reasoningContent" in block:
        reasoning = block["reasoningContent"]
        if "redactedContent" in reasoning:
            yield delta({"reasoningContent": {"redactedContent": reasoning["redactedContent"]}})
        else:
            item = reasoning["reasoningText"]
            for piece in _pieces(item.get("text", ""), 16):
                yield delta({"reasoningContent": {"text": piece}})
            if "signature" in item:
                yield delta({"reasoningContent": {"signature": item["signature"]}})
    elif "text" in block:
        for piece in _pieces(block["text"], 12):
            yield delta({"text": piece})
    yield "contentBlockStop", {"contentBlockIndex": index}


def stream_events(response: Mapping[str, Any]) -> Iterator[tuple[str, Any]]:
    """The ConverseStream events of a whole Converse response."""
    message = response["output"]["message"]
    yield "messageStart", {"role": message.get("role", "assistant")}
    for index, block in enumerate(message["content"]):
        yield from _block_events(index, block)
    yield "messageStop", {"stopReason": response["stopReason"]}
    yield "metadata", {"usage": response.get("usage", {}),
                       "metrics": response.get("metrics", {"latencyMs": 1})}


def stream_bytes(response: Mapping[str, Any]) -> bytes:
    """The whole response as one event-stream body."""
    return b"".join(event_frame(kind, payload) for kind, payload in stream_events(response))
