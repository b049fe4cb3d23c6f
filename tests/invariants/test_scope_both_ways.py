"""Every scope rule checked both ways at the wire (issue 47 item 1): the value IS in the request
bytes where the rule lets it go, and is NOT where the rule keeps it home. A rule tested only one
way survives a bug that widens it (or one that shuts it), so each test below has both halves,
read from the exact bytes the codec hands the transport.

The rules and where they live:

- an own-signed vendor's signature goes only to the host that signed it
  (``codecs/anthropic/profile.py`` ``AnthropicProfile.accepts``, ``own-signed`` / ``as-is``);
- a Claude block's platform: on Bedrock, and for account-bound models everywhere, only blocks
  minted on the same platform and account (``AnthropicProfile.accepts``); Bedrock Converse takes
  a Claude signature from any platform, but only for the same model
  (``codecs/bedrock/profile.py`` ``BedrockProfile.accepts``);
- a native compaction block goes back only to its producer, provider id and host
  (``codecs/anthropic/walk.py`` ``_made_by``, ``codecs/openai_responses/encode.py``
  ``_own_compaction``);
- an Interactions chain is continued only by the model that made its last answer; a model of
  the same tier gets the whole history, signatures included; another tier gets it without them
  (``codecs/interactions/chain.py`` ``link``, ``codecs/gemini/scope.py``);
- an issuer a relay rejected ("was not issued to this caller") is learned, and the encoder
  leaves out that issuer's items, even ones never sent before, and keeps every other issuer's
  (``codecs/openai_responses/encode.py`` ``_sendable``);
- a rejected Claude signature is known by one fingerprint on the Anthropic and the Bedrock
  codecs, so a value rejected on one platform is never sent on the other
  (``codecs/bedrock/policy.py`` ``fingerprint_of``, ``codecs/anthropic/walk.py``
  ``part_fingerprint``).
"""

from __future__ import annotations

import base64
from dataclasses import replace
from typing import Any

import orjson
import pytest

from thoughtline import replay
from thoughtline.codecs import registry
from thoughtline.codecs.anthropic import CODEC as ANTHROPIC
from thoughtline.codecs.base import Encoded, RequestSpec
from thoughtline.codecs.bedrock import CODEC as BEDROCK
from thoughtline.codecs.interactions import chain
from thoughtline.codecs.openai_responses import CODEC as RESPONSES
from thoughtline.codecs.openai_responses import decode_response
from thoughtline.compaction import checkpoint
from thoughtline.events import Done
from thoughtline.messages import (
    Message,
    Opaque,
    Origin,
    Reasoning,
    Text,
    ToolCall,
    ToolResult,
    Usage,
    tool_results,
    user,
)


def _raw(codec: Any, history: list[Message], plan: replay.ReplayPlan, model: str) -> bytes:
    return codec.encode_request(history, plan, RequestSpec(model=model)).raw


def _encoded(codec: Any, history: list[Message], plan: replay.ReplayPlan,
             model: str) -> Encoded:
    return codec.encode_request(history, plan, RequestSpec(model=model))


def _signed_turn(signature: str, where: Origin, *, text: str = "answer") -> Message:
    thought = Reasoning(kind="signed", text=f"thinking behind {signature}", signature=signature,
                        origin=where)
    return Message(role="assistant", parts=(thought, Text(text=text)), origin=where)


def _anthropic_plan(provider: str, base: str | None, model: str,
                    **kwargs: Any) -> replay.ReplayPlan:
    return replay.plan(ANTHROPIC.resolve(provider, base, model), **kwargs)


# --- an own-signed vendor's signature: only to the host that signed it --------------------------

MINIMAX = "MiniMax-M2"


@pytest.mark.parametrize(("provider", "host", "sent"), [
    ("minimax-anthropic", "api.minimax.io", True),  # signed here: back here, unchanged
    ("minimax-anthropic", "api.minimaxi.com", False),  # the vendor's other host did not sign it
    ("custom", "api.minimax.io", False),  # same host under another provider id
])
def test_an_own_signed_signature_goes_only_to_the_host_that_signed_it(
        provider: str, host: str, sent: bool) -> None:
    plan = _anthropic_plan("minimax-anthropic", "https://api.minimax.io/anthropic", MINIMAX)
    assert plan.target is not None and plan.target.host == "api.minimax.io"
    where = Origin(api="anthropic", provider=provider, host=host, model=MINIMAX)
    history = [user("q"), _signed_turn("mm-sig-1", where), user("and then?")]
    body = orjson.loads(_raw(ANTHROPIC, history, plan, MINIMAX))
    signed = [b for m in body["messages"] if isinstance(m["content"], list)
              for b in m["content"] if b["type"] == "thinking"]
    assert signed == ([{"type": "thinking", "thinking": "thinking behind mm-sig-1",
                        "signature": "mm-sig-1"}] if sent else [])


@pytest.mark.parametrize(("host", "sent"), [("api.kimi.com", True), ("moonshot.ai", False)])
def test_an_as_is_vendor_keeps_only_its_own_hosts_signature(host: str, sent: bool) -> None:
    # ``as-is``: this host's blocks as received; another host's thinking goes unsigned.
    model = "kimi-for-coding"
    plan = _anthropic_plan("kimi-coding", "https://api.kimi.com/coding", model)
    where = Origin(api="anthropic", provider="kimi-coding", host=host, model=model)
    call = ToolCall(id="c1", name="f", arguments="{}")
    turn = _signed_turn("k-sig-1", where)
    turn = replace(turn, parts=(turn.parts[0], call))
    history = [user("q"), turn, tool_results([ToolResult(call_id="c1", content="r")])]
    raw = _raw(ANTHROPIC, history, plan, model)
    assert (b'"k-sig-1"' in raw) is sent
    assert b"thinking behind k-sig-1" in raw  # the text itself goes either way


# --- a Claude block's platform ------------------------------------------------------------------

BEDROCK_OPUS = "anthropic.claude-opus-4-6-v1"


@pytest.mark.parametrize(("made", "sent"), [
    (Origin(api="bedrock", provider="bedrock", model=BEDROCK_OPUS, account="111"), True),
    (Origin(api="anthropic", provider="bedrock-anthropic",
            host="bedrock-runtime.us-east-1.amazonaws.com", model="claude-opus-4-6",
            account="111"), True),
    # the Claude API, the same account id: another platform, Bedrock's check fails
    (Origin(api="anthropic", provider="anthropic", host="api.anthropic.com",
            model="claude-opus-4-6", account="111"), False),
    (Origin(api="bedrock", provider="bedrock", model=BEDROCK_OPUS, account="222"), False),
])
def test_bedrock_messages_takes_only_blocks_minted_on_bedrock_in_its_account(
        made: Origin, sent: bool) -> None:
    model = "claude-opus-4-6"
    plan = _anthropic_plan("bedrock-anthropic", None, model, account="111")
    history = [user("q"), _signed_turn("opus-sig-1", made), user("again")]
    assert (b'"opus-sig-1"' in _raw(ANTHROPIC, history, plan, model)) is sent


@pytest.mark.parametrize(("made", "sent"), [
    (Origin(api="anthropic", provider="anthropic", host="api.anthropic.com",
            model="claude-sonnet-5-5", account="org-a"), True),
    # Vertex, the same account id: an account-bound model's block stays on its platform
    (Origin(api="anthropic", provider="vertex-anthropic",
            host="us-east5-aiplatform.googleapis.com", model="claude-sonnet-5-5",
            account="org-a"), False),
    (Origin(api="anthropic", provider="anthropic", host="api.anthropic.com",
            model="claude-sonnet-5-5", account="org-b"), False),
])
def test_an_account_bound_claude_block_stays_on_its_platform_and_account(
        made: Origin, sent: bool) -> None:
    model = "claude-sonnet-5-5"
    plan = _anthropic_plan("anthropic", None, model, account="org-a")
    history = [user("q"), _signed_turn("sonnet55-sig", made), user("again")]
    assert (b'"sonnet55-sig"' in _raw(ANTHROPIC, history, plan, model)) is sent


@pytest.mark.parametrize(("made_by", "sent"), [
    ("claude-sonnet-4-5", True),  # the same model made it on the Claude API: Converse reads it
    ("claude-opus-4-5", False),  # another Claude model: never
])
def test_bedrock_converse_takes_a_claude_signature_from_any_platform_for_the_same_model(
        made_by: str, sent: bool) -> None:
    model = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
    plan = replay.plan(BEDROCK.resolve("bedrock", None, model))
    made = Origin(api="anthropic", provider="vertex-anthropic",
                  host="us-east5-aiplatform.googleapis.com", model=made_by)
    call = ToolCall(id="c1", name="f", arguments="{}")
    turn = _signed_turn("claude-sig-1", made)
    turn = replace(turn, parts=(turn.parts[0], call))
    history = [user("q"), turn, tool_results([ToolResult(call_id="c1", content="r")])]
    assert (b'"claude-sig-1"' in _raw(BEDROCK, history, plan, model)) is sent


# --- a native compaction block: only to its producer --------------------------------------------

CLAUDE_COMPACTS = "claude-sonnet-4-6"
SUMMARY = "The user asked about the weather in three cities."


def _anthropic_checkpoint(provider: str, host: str) -> list[Message]:
    made = Origin(api="anthropic", provider=provider, host=host, model=CLAUDE_COMPACTS)
    block = Opaque(native={"anthropic": {"type": "compaction", "content": SUMMARY,
                                         "signature": "cmp-sig-1"}}, origin=made)
    return [checkpoint(SUMMARY, block), user("and now?")]


@pytest.mark.parametrize(("provider", "host", "sent"), [
    ("anthropic", "api.anthropic.com", True),
    ("anthropic", "claude-relay.example", False),  # the same provider id at another host
    ("claude-b", "api.anthropic.com", False),  # another provider id at the same host
])
def test_an_anthropic_compaction_block_goes_back_only_to_its_provider_and_host(
        provider: str, host: str, sent: bool) -> None:
    plan = _anthropic_plan("anthropic", "https://api.anthropic.com", CLAUDE_COMPACTS)
    assert plan.target is not None and plan.target.host == "api.anthropic.com"
    body = orjson.loads(_raw(ANTHROPIC, _anthropic_checkpoint(provider, host), plan,
                             CLAUDE_COMPACTS))
    blocks = [b for m in body["messages"] if isinstance(m["content"], list)
              for b in m["content"] if b.get("type") == "compaction"]
    assert bool(blocks) is sent
    if sent:
        assert blocks == [{"type": "compaction", "content": SUMMARY, "signature": "cmp-sig-1"}]
    else:  # the summary text stands in, and no signature goes anywhere
        assert SUMMARY in orjson.dumps(body).decode() and b"cmp-sig-1" not in orjson.dumps(body)


OPENAI = "https://api.openai.com/v1"


@pytest.mark.parametrize(("provider", "host", "sent"), [
    ("openai-responses", "api.openai.com", True),
    ("openai-responses", "relay.example", False),
    ("some-relay", "api.openai.com", False),  # same host, another provider id
])
def test_a_responses_compaction_item_goes_back_only_to_its_provider_and_host(
        provider: str, host: str, sent: bool) -> None:
    plan = replay.plan(RESPONSES.resolve("openai-responses", OPENAI, "gpt-5"))
    assert plan.target is not None and plan.target.host == "api.openai.com"
    made = replace(plan.target, provider=provider, host=host)
    item = {"type": "compaction", "id": "cmp_1", "encrypted_content": "SEALED-COMPACTION-1"}
    history = [checkpoint(SUMMARY, Opaque(native={"openai-responses": item}, origin=made)),
               user("and now?")]
    raw = _raw(RESPONSES, history, plan, "gpt-5")
    assert (b"SEALED-COMPACTION-1" in raw) is sent
    assert (SUMMARY.encode() in raw) is not sent


# --- an Interactions chain: continued by the same model only ------------------------------------

GEMINI_API = "gemini-interactions"
GEMINI_BASE = "https://generativelanguage.googleapis.com/v1beta"
GEMINI_MADE = "gemini-3-pro-preview"
INTERACTIONS = registry.codec(GEMINI_API)


def _interactions_plan(model: str) -> replay.ReplayPlan:
    return replay.plan(INTERACTIONS.resolve(GEMINI_API, GEMINI_BASE, model))


def _stamped_history() -> list[Message]:
    """Two answers of ``GEMINI_MADE`` as a stateful session stores them (stamped by the codec)."""
    plan = _interactions_plan(GEMINI_MADE)
    assert plan.target is not None
    history: list[Message] = []
    for n in (1, 2):
        history.append(user(f"q{n}"))
        encoded = _encoded(INTERACTIONS, history, plan, GEMINI_MADE)
        answer = Message(role="assistant", origin=plan.target,
                         native={GEMINI_API: {chain.ID_KEY: f"v1_{n}"}}, parts=(
                             Reasoning(kind="signed", signature=f"Gsig{n}==",
                                       summary=f"thinking {n}", origin=plan.target),
                             Text(text=f"answer {n}")))
        done = Done(message=answer, usage=Usage(), finish_reason="completed")
        history.append(INTERACTIONS.stamp(done, encoded).message)
    return [*history, user("q3")]


@pytest.mark.parametrize(("model", "continued", "signatures"), [
    (GEMINI_MADE, True, False),  # its own chain: only the new turn, the server has the rest
    ("gemini-3.1-pro-preview", False, True),  # one tier: the whole history, signatures read
    ("gemini-3-flash-preview", False, False),  # another tier: the whole history, no signature
])
def test_an_interactions_chain_is_continued_only_by_the_model_that_made_it(
        model: str, continued: bool, signatures: bool) -> None:
    body = orjson.loads(_raw(INTERACTIONS, _stamped_history(), _interactions_plan(model), model))
    assert ("previous_interaction_id" in body) is continued
    if continued:
        assert body["previous_interaction_id"] == "v1_2"
        assert [s["type"] for s in body["input"]] == ["user_input"]
        return
    texts = [c["text"] for s in body["input"] if s["type"] == "user_input" for c in s["content"]]
    assert texts == ["q1", "q2", "q3"]  # the whole history, from the start
    sent = [s["signature"] for s in body["input"] if s["type"] == "thought"]
    assert sent == (["Gsig1==", "Gsig2=="] if signatures else [])


# --- a learned issuer rejection: that issuer's items stay home, others' go ----------------------

RELAY = "https://relay.example/v1"
RELAY_MODEL = "openai/gpt-5.5"
FOREIGN_WORDS = "The encrypted content for item {} was not issued to this caller."


def _relay_plan(**kwargs: Any) -> replay.ReplayPlan:
    return replay.plan(RESPONSES.resolve("some-relay", RELAY, RELAY_MODEL), issuer="caller-two",
                       **kwargs)


def _issued_turn(n: int, issuer: str) -> list[Message]:
    """An answer whose encrypted reasoning item was issued to ``issuer``, and its result."""
    plan = _relay_plan()
    assert plan.target is not None
    made = replace(plan.target, account=issuer)
    response = {"id": f"resp_{n}", "status": "completed", "model": RELAY_MODEL, "output": [
        {"type": "reasoning", "id": f"rs_{n}", "summary": [],
         "encrypted_content": f"SEALED-{issuer}-{n}"},
        {"type": "function_call", "id": f"fc_{n}", "call_id": f"call_{n}", "name": "lookup",
         "arguments": "{}", "status": "completed"}]}
    answer = decode_response(response, made).message
    return [answer, tool_results([ToolResult(call_id=f"call_{n}", content=f"r{n}")])]


def test_a_learned_issuer_rejection_keeps_that_issuers_items_home_and_sends_the_rest() -> None:
    history = [user("q1"), *_issued_turn(1, "caller-one"), user("q2"),
               *_issued_turn(2, "caller-two"), user("q3")]
    plan = _relay_plan()
    before = _encoded(RESPONSES, history, plan, RELAY_MODEL)
    # Nothing learned yet: both issuers' items go (the scope itself does not know issuers).
    assert b"SEALED-caller-one-1" in before.raw and b"SEALED-caller-two-2" in before.raw
    lesson = RESPONSES.classify(400, orjson.dumps({"error": {
        "message": FOREIGN_WORDS.format("rs_1"), "type": "invalid_request_error",
        "param": None, "code": None}}).decode(), before, plan)
    assert lesson is not None and lesson.fingerprints
    # Later turns: caller-one issued another item that was never sent, caller-two one more.
    later = [*history, *_issued_turn(3, "caller-one"), user("q4"),
             *_issued_turn(4, "caller-two"), user("q5")]
    raw = _raw(RESPONSES, later, _relay_plan(fingerprints=lesson.fingerprints), RELAY_MODEL)
    assert b"SEALED-caller-one-1" not in raw
    assert b"SEALED-caller-one-3" not in raw  # never sent, yet its issuer is known rejected
    assert b"SEALED-caller-two-2" in raw and b"SEALED-caller-two-4" in raw


# --- one fingerprint for a Claude value on Anthropic and Bedrock --------------------------------

OPUS = "claude-opus-4-5"
BEDROCK_OPUS_45 = "us.anthropic.claude-opus-4-5-20251101-v1:0"
INVALID = "messages.1.content.0: Invalid `signature` in `thinking` block"


def _claude_history() -> list[Message]:
    made = Origin(api="anthropic", provider="anthropic", host="api.anthropic.com", model=OPUS)
    redacted = Message(role="assistant", origin=made, parts=(
        Reasoning(kind="redacted", data="REDACTED-DATA-3==", origin=made), Text(text="a3")))
    return [user("q1"), _signed_turn("shared-sig-1", made), user("q2"),
            _signed_turn("shared-sig-2", made), user("q3"), redacted, user("q4")]


def _claude_values(raw: bytes) -> list[str]:
    """The Claude values in a body; Converse carries a redacted block's data base64-encoded
    (``redactedContent`` is a blob)."""
    return [v for v in ("shared-sig-1", "shared-sig-2", "REDACTED-DATA-3==")
            if f'"{v}"'.encode() in raw or b'"' + base64.b64encode(v.encode()) + b'"' in raw]


def test_a_signature_rejected_on_anthropic_is_not_sent_on_bedrock() -> None:
    history = _claude_history()
    plan = _anthropic_plan("anthropic", None, OPUS)
    encoded = _encoded(ANTHROPIC, history, plan, OPUS)
    assert _claude_values(encoded.raw) == ["shared-sig-1", "shared-sig-2", "REDACTED-DATA-3=="]
    body = orjson.dumps({"type": "error", "error": {"type": "invalid_request_error",
                                                    "message": INVALID}}).decode()
    lesson = ANTHROPIC.classify(400, body, encoded, plan)
    assert lesson is not None and lesson.fingerprints
    on_bedrock = replay.plan(BEDROCK.resolve("bedrock", None, BEDROCK_OPUS_45))
    assert _claude_values(_raw(BEDROCK, history, on_bedrock, BEDROCK_OPUS_45)) == [
        "shared-sig-1", "shared-sig-2", "REDACTED-DATA-3=="]  # nothing learned: all go
    learned = replace(on_bedrock, fingerprints=frozenset(lesson.fingerprints))
    assert _claude_values(_raw(BEDROCK, history, learned, BEDROCK_OPUS_45)) == [
        "shared-sig-2", "REDACTED-DATA-3=="]


def test_a_signature_rejected_on_bedrock_is_not_sent_on_anthropic() -> None:
    history = _claude_history()
    plan = replay.plan(BEDROCK.resolve("bedrock", None, BEDROCK_OPUS_45))
    encoded = _encoded(BEDROCK, history, plan, BEDROCK_OPUS_45)
    lesson = BEDROCK.classify(400, orjson.dumps({"message": INVALID}).decode(), encoded, plan)
    assert lesson is not None and lesson.fingerprints
    learned = _anthropic_plan("anthropic", None, OPUS, fingerprints=lesson.fingerprints)
    assert _claude_values(_raw(ANTHROPIC, history, learned, OPUS)) == [
        "shared-sig-2", "REDACTED-DATA-3=="]


def test_a_redacted_block_rejected_on_one_platform_stays_home_on_the_other() -> None:
    history = _claude_history()
    bedrock = replay.plan(BEDROCK.resolve("bedrock", None, BEDROCK_OPUS_45))
    encoded = _encoded(BEDROCK, history, bedrock, BEDROCK_OPUS_45)
    # the redacted block is the third assistant turn's first block: messages.5.content.0
    named = "messages.5.content.0: Invalid 'data' in 'redacted_thinking' block"
    lesson = BEDROCK.classify(400, orjson.dumps({"message": named}).decode(), encoded, bedrock)
    assert lesson is not None and lesson.fingerprints
    learned = _anthropic_plan("anthropic", None, OPUS, fingerprints=lesson.fingerprints)
    assert _claude_values(_raw(ANTHROPIC, history, learned, OPUS)) == [
        "shared-sig-1", "shared-sig-2"]
