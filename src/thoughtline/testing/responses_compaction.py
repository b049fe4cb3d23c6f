"""Server-side compaction in the Responses emulator, from the documented shapes.

Rules, each with its source (provider-updates §4a, §4b):
- ``{"type": "compaction_trigger"}`` "Compacts the current context. Must be the final input
  item": anywhere else it is refused with a 400 naming it.
- A triggered request is answered with exactly one ``compaction`` output item carrying
  ``encrypted_content`` (Codex requires exactly one: "expected exactly one compaction output item,
  got 0", CLIProxyAPI#4848).
- A replayed ``compaction`` item must carry the ``encrypted_content`` this issuer sealed, unchanged
  (readable only by the provider that produced it; OpenRouter: translated providers "drop the
  field"); otherwise the usual ``invalid_encrypted_content`` 400.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

import orjson

from thoughtline.testing.responses_rules import Rejection
from thoughtline.testing.responses_sealing import Sealer

TRIGGER = "compaction_trigger"
ITEM = "compaction"


def _error(message: str, *, code: str | None = None, param: str | None = None) -> Rejection:
    return Rejection(status=400, body={"error": {
        "message": message, "type": "invalid_request_error", "param": param, "code": code}})


def _items(body: Mapping[str, Any]) -> list[Any]:
    found = body.get("input")
    return found if isinstance(found, list) else []


def triggered(body: Mapping[str, Any]) -> bool:
    items = _items(body)
    return bool(items) and isinstance(items[-1], Mapping) and items[-1].get("type") == TRIGGER


def check(body: Mapping[str, Any], sealer: Sealer) -> Rejection | None:
    items = _items(body)
    for index, item in enumerate(items):
        if not isinstance(item, Mapping):
            continue
        if item.get("type") == TRIGGER and index != len(items) - 1:
            return _error("compaction_trigger must be the final input item.",
                          param=f"input[{index}]")
        if item.get("type") == ITEM:
            opened = sealer.open(item.get("encrypted_content"))
            if opened.verdict != "ok" or (opened.plaintext or {}).get("kind") != ITEM:
                return _error(f"The encrypted content for item {item.get('id') or '(no id)'} "
                              "could not be verified. Reason: Encrypted content could not be "
                              "decrypted or parsed.", code="invalid_encrypted_content",
                              param=f"input[{index}]")
    return None


def answer(body: Mapping[str, Any], model: str, sealer: Sealer,
           prompt_bytes: int) -> dict[str, Any]:
    """The whole response to a triggered request: one sealed ``compaction`` item."""
    items = _items(body)
    digest = hashlib.sha256(orjson.dumps(items)).hexdigest()[:24]
    sealed = sealer.seal({"kind": ITEM, "items": str(len(items) - 1), "digest": digest})
    output = [{"id": f"cmp_emu{digest}", "type": ITEM, "encrypted_content": sealed}]
    return {"id": f"resp_emucmp{digest}", "object": "response", "created_at": 1785273853,
            "status": "completed", "error": None, "incomplete_details": None, "model": model,
            "output": output, "store": body.get("store", True) is not False,
            "usage": {"input_tokens": prompt_bytes // 4,
                      "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 1,
                      "output_tokens_details": {"reasoning_tokens": 0},
                      "total_tokens": prompt_bytes // 4 + 1}}
