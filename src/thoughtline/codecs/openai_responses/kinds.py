"""What the Responses face does with each input item and content part a client may send.

Every type in the ``openai`` SDK's ``ResponseInputItemParam`` and input content unions is
classified here, so a new one fails a test until someone decides
(``tests/codecs/test_face_kinds.py``), and ``docs/faces.md`` shows the table:

- ``MAPPED``: it has a canonical meaning (a message, reasoning, a call, its output, tools),
  so every upstream gets it in its own terms;
- ``OWN``: no canonical meaning: it goes verbatim, in its place, to a Responses upstream
  only (an issuer-scoped value such as a provider's own ``compaction`` goes only where the
  replay scope allows), and every other upstream gets nothing of it — the
  request log names it in ``dropped`` as ``input[<type>]`` or ``content[<type>]``;
- ``MINTED``: a value of the gateway's own (a minted ``reasoning`` or ``compaction``
  ``encrypted_content``) is verified and expanded, never sent on.

A type missing from the tables is handled as ``OWN``. Data only.
"""

from __future__ import annotations

from collections.abc import Mapping

from thoughtline.codecs.face import MAPPED, MINTED, OWN

__all__ = ["ITEMS", "MAPPED", "MINTED", "OWN", "PARTS", "TEXT_PARTS", "dropped_item",
           "dropped_part"]


#: Input item type → what the face does with it.
ITEMS: Mapping[str, str] = {
    "message": MAPPED,
    "reasoning": MINTED,
    "function_call": MAPPED,
    "function_call_output": MAPPED,
    "custom_tool_call": MAPPED,
    "custom_tool_call_output": MAPPED,
    "additional_tools": MAPPED,      # its tools join the request's; the item rides in place
    "compaction_trigger": MAPPED,    # the gateway compacts (a Responses upstream compacts itself)
    "compaction": MINTED,            # a provider's own goes verbatim to its issuer only
    "agent_message": MAPPED,         # a user message; the item verbatim to OpenAI only (agents)
    "item_reference": OWN,
    "configuration_update": OWN,
    "program": OWN,
    "program_output": OWN,
    "file_search_call": OWN,
    "computer_call": OWN,
    "computer_call_output": OWN,
    "web_search_call": OWN,
    "tool_search_call": OWN,
    "tool_search_output": OWN,
    "image_generation_call": OWN,
    "code_interpreter_call": OWN,
    "local_shell_call": OWN,
    "local_shell_call_output": OWN,
    "shell_call": OWN,
    "shell_call_output": OWN,
    "apply_patch_call": OWN,
    "apply_patch_call_output": OWN,
    "mcp_list_tools": OWN,
    "mcp_approval_request": OWN,
    "mcp_approval_response": OWN,
    "mcp_call": OWN,
}

#: Content part type (in a message item) → what the face does with it.
PARTS: Mapping[str, str] = {
    "input_text": MAPPED,
    "output_text": MAPPED,
    "text": MAPPED,
    "refusal": MAPPED,
    "input_image": OWN,
    "input_file": OWN,
    "input_audio": OWN,
}

#: The text part types.
TEXT_PARTS = frozenset({"input_text", "output_text", "text"})


def dropped_item(kind: str) -> str:
    """How the request log names an item other APIs did not get."""
    return f"input[{kind}]"


def dropped_part(kind: str) -> str:
    """How the request log names a content part other APIs did not get."""
    return f"content[{kind}]"
