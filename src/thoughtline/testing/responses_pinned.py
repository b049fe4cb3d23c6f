"""Position-critical items in the Responses emulator (``ResponsesEmulator.pin_items()``).

Rules, each with its source (openai-python ``src/openai/types/responses/``, the input item
types): new items go back unchanged in their original position: ``configuration_update`` (a
mid-conversation effort change) and ``program`` items carrying a ``fingerprint`` ("Opaque
program replay fingerprint that must be round-tripped"). SYNTHETIC: no public recording of either
exists; the field names are the documented ones, the 400 wordings are this emulator's (unverified).

With pinning on, every answer is ``[configuration_update, reasoning, message, program, …]``; a
replayed one must be byte for byte the item issued, and its neighbours from its own answer (among
the items replayed) must be the ones it had there.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson

from thoughtline.testing.responses_rules import Rejection
from thoughtline.testing.responses_sealing import Sealer

KINDS = ("configuration_update", "program")


@dataclass(slots=True)
class Pinned:
    """The items issued so far: id → (the item's bytes, the ids of its answer's items)."""

    on: bool = False
    issued: dict[str, tuple[bytes, tuple[str, ...]]] = field(default_factory=dict)

    def add(self, output: list[dict[str, Any]], sealer: Sealer) -> list[dict[str, Any]]:
        """``output`` with a configuration_update first and a program item after the
        message, both recorded with their answer's order."""
        if not self.on or not output or output[0].get("type") == "compaction":
            return output  # (a compaction answer is exactly one item: docs/codex.md)
        tag = str(output[0].get("id", "x")).split("_", 1)[-1]
        update: dict[str, Any] = {"type": "configuration_update", "id": f"cfg_{tag}",
                                  "reasoning": {"effort": "low"}}
        program: dict[str, Any] = {
            "type": "program", "id": f"prg_{tag}", "status": "completed",
            "fingerprint": sealer.seal({"kind": "program", "id": f"prg_{tag}"})}
        # (after the message: a reasoning item must be followed by the item it led to)
        out = [update, *output[:2], program, *output[2:]]
        order = tuple(str(item.get("id")) for item in out)
        for item in (update, program):
            self.issued[item["id"]] = (orjson.dumps(item, option=orjson.OPT_SORT_KEYS), order)
        return out

    def check(self, body: Mapping[str, Any]) -> Rejection | None:
        items = body.get("input")
        if not isinstance(items, list):
            return None
        ids = [str(i.get("id")) if isinstance(i, Mapping) and i.get("id") else None
               for i in items]
        for index, item in enumerate(items):
            if not isinstance(item, Mapping) or item.get("type") not in KINDS:
                continue
            known = self.issued.get(str(item.get("id")))
            if known is None or orjson.dumps(item, option=orjson.OPT_SORT_KEYS) != known[0]:
                return _error(f"Item '{item.get('id')}' of type '{item.get('type')}' was "
                              "altered or not issued by this service.", f"input[{index}]")
            if not _in_place(ids, index, known[1]):
                return _error(f"Item '{item.get('id')}' of type '{item.get('type')}' must stay "
                              "in its original position.", f"input[{index}]")
        return None


def _in_place(ids: list[str | None], index: int, order: tuple[str, ...]) -> bool:
    """Its neighbours from its own answer, among the items replayed, are the ones it had."""
    replayed = [i for i in order if i in ids]
    mine = replayed.index(ids[index])  # type: ignore[arg-type]
    want_before = replayed[mine - 1] if mine > 0 else None
    want_after = replayed[mine + 1] if mine + 1 < len(replayed) else None
    before = ids[index - 1] if index > 0 else None
    after = ids[index + 1] if index + 1 < len(ids) else None
    if want_before is not None and before != want_before:
        return False
    if want_before is None and before in order:
        return False
    if want_after is not None and after != want_after:
        return False
    return not (want_after is None and after in order)


def _error(message: str, param: str) -> Rejection:
    return Rejection(status=400, body={"error": {
        "message": message, "type": "invalid_request_error", "param": param, "code": None}})
