"""The 4xx classifier: every wording it knows, and the near misses it must not take for them.

Positive bodies are built around the wordings users pasted in public threads (pointers in
``tests/fixtures/SOURCES.md`` "Category 7" and in each ``WORDINGS`` row), wrapped in the envelope
each provider sends. The recorded non-reasoning 4xx bodies in ``tests/fixtures/errors/`` (sources
in ``tests/fixtures/SOURCES.md`` section 7, licenses in ``tests/fixtures/licenses/``) are negatives.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from thoughtline.codecs.openai_chat.rejections import (
    CARRIERS,
    WORDINGS,
    Classification,
    classify,
    describe,
)

RC, R, RD = CARRIERS
ALL = frozenset(CARRIERS)
ERRORS = Path(__file__).parent / "fixtures" / "errors"


def compact(obj: object) -> str:
    return json.dumps(obj, separators=(",", ":"))


def openrouter(raw: str, provider: str) -> str:
    """OpenRouter's envelope: the upstream body travels as an escaped string in metadata.raw."""
    return compact({"error": {"message": "Provider returned error", "code": 400,
                              "metadata": {"raw": raw, "provider_name": provider}}})


# --- real wordings in their providers' envelopes -------------------------------------------------

MISTRAL_RC_DETAIL = ('{"type":"extra_forbidden","msg":"Extra inputs are not permitted",'
                     '"loc":["body","messages",2,"assistant","reasoning_content"]}')
MISTRAL_OLD = ('{"object":"error","message":{"detail":[' + MISTRAL_RC_DETAIL + ']},'
               '"type":"invalid_request_message_error","param":null,"code":null}')
MISTRAL_NEW = ('{"detail":[{"type":"extra_forbidden","loc":["body","messages",2,"assistant",'
               '"reasoning_content"],"msg":"Extra inputs are not permitted",'
               '"input":"The user wants the weather; call get_weather."}]}')
MISTRAL_R = ('{"detail":[{"type":"extra_forbidden","loc":["body","messages",2,"assistant",'
             '"reasoning"],"msg":"Extra inputs are not permitted","input":"Thinking."}]}')
GROQ_RC = ('{"error":{"message":"\'messages.1\' : for \'role:assistant\' the following must be '
           'satisfied[(\'messages.1\' : property \'reasoning_content\' is unsupported)]",'
           '"type":"invalid_request_error"}}')
GROQ_R = GROQ_RC.replace("'reasoning_content'", "'reasoning'")
CEREBRAS_RC = ('{"message":"messages.2.assistant.reasoning_content: property '
               '\'messages.2.assistant.reasoning_content\' is unsupported",'
               '"type":"invalid_request_error","param":"validation_error","code":"wrong_api_format"}')
CEREBRAS_R = CEREBRAS_RC.replace("reasoning_content", "reasoning")
RELAY_RD = "Extra inputs are not permitted, field: 'messages[1].reasoning_details'"
RELAY_RD_JSON = compact({"error": {"message": RELAY_RD, "type": "invalid_request_error"}})
# The relay phrases (codecs/openai_chat/rejections.py WORDINGS) come without a full body; these
# carry each phrase in the shape such a relay would use.
NO_SUCH_FIELD = compact({"error": {"message": "no such field: messages[3].reasoning_content"}})
UNKNOWN_FIELD = compact({"error": {"message": 'json: unknown field "reasoning_details"'}})
UNRECOGNIZED_RC = compact({"error": {
    "message": "Unrecognized request argument supplied: reasoning_content",
    "type": "invalid_request_error", "param": None, "code": None}})
UNKNOWN_PARAM_RC = compact({"error": {
    "message": "Unknown parameter: 'messages[1].reasoning_content'.",
    "type": "invalid_request_error", "param": "messages[1].reasoning_content",
    "code": "unknown_parameter"}})
UNKNOWN_PARAM_R = UNKNOWN_PARAM_RC.replace("reasoning_content", "reasoning")
UNEXPECTED_FIELD = compact({"error": {"message": 'unexpected field "messages.1.reasoning"'}})
ADDITIONAL_PROPS = compact({"error": {
    "message": "Additional properties are not allowed ('reasoning_content' was unexpected)"}})
UNKNOWN_KEY = compact({"error": {"message": "unknown key 'reasoning_details' in messages[2]"}})
OPENROUTER_MISTRAL = openrouter(MISTRAL_NEW, "Mistral")
OPENROUTER_GROQ_R = openrouter(compact(json.loads(GROQ_R)), "Groq")
# A logged OpenRouter body, escaped once more (the wording now sits two escape levels deep).
OPENROUTER_TWICE = compact({"body": OPENROUTER_MISTRAL})

DROP_CASES = [
    # id, body, sent, must_echo, expected drop, expected row
    ("mistral-old-envelope", MISTRAL_OLD, {RC}, False, ALL, "extra-inputs-not-permitted"),
    ("mistral-new-envelope", MISTRAL_NEW, {RC}, False, ALL, "extra-inputs-not-permitted"),
    ("mistral-loc-reasoning", MISTRAL_R, {R}, False, {R}, "extra-inputs-not-permitted"),
    ("groq-rc", GROQ_RC, {RC}, False, ALL, "property-is-unsupported"),
    ("groq-r-in-message", GROQ_R, {RC, R}, False, {R}, "property-is-unsupported"),
    ("cerebras-rc", CEREBRAS_RC, {RC}, False, ALL, "property-is-unsupported"),
    ("cerebras-r", CEREBRAS_R, {R}, False, {R}, "property-is-unsupported"),
    ("relay-rd-bare", RELAY_RD, {RC, RD}, False, {RD}, "extra-inputs-not-permitted"),
    ("relay-rd-json", RELAY_RD_JSON, {RD}, False, {RD}, "extra-inputs-not-permitted"),
    ("no-such-field", NO_SUCH_FIELD, {RC}, False, ALL, "no-such-field"),
    ("unknown-field", UNKNOWN_FIELD, {RC, R, RD}, False, {R, RD}, "unknown-field"),
    ("unrecognized-request-argument", UNRECOGNIZED_RC, {RC}, False, ALL,
     "unrecognized-request-argument"),
    ("unknown-parameter-rc", UNKNOWN_PARAM_RC, {RC}, False, ALL, "unknown-parameter"),
    ("unknown-parameter-r-in-path", UNKNOWN_PARAM_R, {RC, R}, False, {R}, "unknown-parameter"),
    ("unexpected-field", UNEXPECTED_FIELD, {R}, False, {R}, "unexpected-field"),
    ("unexpected-field-message-clause", "messages.1: unexpected field 'reasoning'", {R}, False,
     {R}, "unexpected-field"),
    ("additional-properties", ADDITIONAL_PROPS, {RC, R}, False, ALL, "additional-properties"),
    ("unknown-key", UNKNOWN_KEY, {RC, RD}, False, {RD}, "unknown-key"),
    ("openrouter-nested-mistral", OPENROUTER_MISTRAL, {RC, R, RD}, False, ALL,
     "extra-inputs-not-permitted"),
    ("openrouter-nested-groq-r", OPENROUTER_GROQ_R, {R, RD}, False, {R, RD},
     "property-is-unsupported"),
    ("escaped-twice", OPENROUTER_TWICE, {RC}, False, ALL, "extra-inputs-not-permitted"),
    ("unicode-escaped", MISTRAL_NEW.replace("reasoning_content", "reasoning\\u005fcontent"),
     {RC}, False, ALL, "extra-inputs-not-permitted"),
]


@pytest.mark.parametrize(("body", "sent", "must_echo", "drop", "row"),
                         [c[1:] for c in DROP_CASES], ids=[c[0] for c in DROP_CASES])
@pytest.mark.parametrize("status", [400, 422, None])
def test_unknown_field_wordings_drop(status: int | None, body: str, sent: set[str],
                                     must_echo: bool, drop: set[str], row: str) -> None:
    c = classify(status, body, sent=sent, must_echo=must_echo)
    assert (c.action, c.drop, c.wording) == ("drop", frozenset(drop), row)
    assert c.reason.startswith("rejected replayed ")


# --- "reasoning required": the pad ----------------------------------------------------------------

DEEPSEEK_PASS_BACK = compact({"error": {
    "message": "The `reasoning_content` in the thinking mode must be passed back to the API.",
    "type": "invalid_request_error", "param": None, "code": "invalid_request_error"}})
DEEPSEEK_MISSING = compact({"error": {
    "message": "Missing `reasoning_content` field in the assistant message at message index 2.",
    "type": "invalid_request_error", "param": None, "code": "invalid_request_error"}})
KIMI_MISSING = compact({"error": {
    "message": "thinking is enabled but reasoning_content is missing in assistant tool call "
               "message at index 7", "type": "invalid_request_error"}})
DEEPSEEK_ANTHROPIC = compact({"type": "error", "error": {
    "type": "invalid_request_error",
    "message": "The `content[].thinking` in the thinking mode must be passed back to the API."}})

PAD_CASES = [
    ("deepseek-pass-back", DEEPSEEK_PASS_BACK, "deepseek-rc-must-be-passed-back"),
    ("deepseek-missing-field", DEEPSEEK_MISSING, "deepseek-missing-rc-field"),
    ("kimi-missing-in-tool-call", KIMI_MISSING, "kimi-rc-missing-in-tool-call"),
    ("mimo-same-as-deepseek", DEEPSEEK_PASS_BACK, "deepseek-rc-must-be-passed-back"),
    ("kimi-via-openrouter", openrouter(KIMI_MISSING, "Moonshot AI"),
     "kimi-rc-missing-in-tool-call"),
    ("deepseek-via-openrouter", openrouter(DEEPSEEK_MISSING, "DeepSeek"),
     "deepseek-missing-rc-field"),
    ("backticks-unicode-escaped", DEEPSEEK_PASS_BACK.replace("`", "\\u0060"),
     "deepseek-rc-must-be-passed-back"),
    ("plain-text", "Missing `reasoning_content` field in the assistant message at message index 4.",
     "deepseek-missing-rc-field"),
]


@pytest.mark.parametrize(("body", "row"), [c[1:] for c in PAD_CASES], ids=[c[0] for c in PAD_CASES])
@pytest.mark.parametrize("sent", [set(), {RC}, ALL])
@pytest.mark.parametrize("must_echo", [False, True])
@pytest.mark.parametrize("status", [400, None])
def test_reasoning_required_wordings_pad(status: int | None, must_echo: bool, sent: set[str],
                                         body: str, row: str) -> None:
    c = classify(status, body, sent=sent, must_echo=must_echo)
    assert (c.action, c.drop, c.wording) == ("pad", frozenset(), row)


def test_deepseek_anthropic_thinking_demand_is_not_a_chat_pad() -> None:
    c = classify(400, DEEPSEEK_ANTHROPIC, sent=ALL, must_echo=True)
    assert (c.action, c.drop) == ("none", frozenset())
    assert c.wording == "deepseek-anthropic-thinking-must-be-passed-back"


# --- status gate ----------------------------------------------------------------------------------

POSITIVE_BODIES = [c[1] for c in DROP_CASES] + [c[1] for c in PAD_CASES]


@pytest.mark.parametrize("body", POSITIVE_BODIES)
@pytest.mark.parametrize("status", [500, 502, 503, 529, 200, 302, 399, 0])
def test_only_4xx_or_no_status_is_considered(status: int, body: str) -> None:
    assert classify(status, body, sent=ALL, must_echo=False) == Classification(action="none")


# --- near misses ----------------------------------------------------------------------------------

TOP_LEVEL_REASONING = [
    compact({"error": {"message": "property 'reasoning' is unsupported",
                       "type": "invalid_request_error"}}),
    compact({"error": {"message": "Unrecognized request argument supplied: reasoning",
                       "type": "invalid_request_error", "param": None, "code": None}}),
    compact({"error": {"message": "Unknown parameter: 'reasoning'.",
                       "type": "invalid_request_error", "param": "reasoning",
                       "code": "unknown_parameter"}}),
    compact({"error": {"message": "Unknown parameter: 'reasoning.effort'.",
                       "type": "invalid_request_error", "param": "reasoning.effort"}}),
    '{"detail":[{"type":"extra_forbidden","loc":["body","reasoning"],'
    '"msg":"Extra inputs are not permitted","input":{"effort":"high"}}]}',
    openrouter(compact({"error": {"message": "property 'reasoning' is unsupported"}}), "Groq"),
]


@pytest.mark.parametrize("body", TOP_LEVEL_REASONING)
def test_top_level_reasoning_parameter_never_drops_the_carrier(body: str) -> None:
    assert classify(400, body, sent={R}, must_echo=False).action == "none"
    assert classify(400, body, sent=ALL, must_echo=False).action == "none"


@pytest.mark.parametrize("carrier", [RC, RD])
def test_a_carrier_named_like_a_top_level_key_the_request_carried_is_not_learned(
        carrier: str) -> None:
    body = f"Unrecognized request argument supplied: {carrier}"
    learned = classify(400, body, sent=ALL, must_echo=False)
    assert learned.action == "drop" and carrier in learned.drop  # named, sent, not our own key
    own = classify(400, body, sent=ALL, must_echo=False,
                   top_level={"model", "messages", carrier})
    assert own.action == "none"  # the rejected field may be the caller's own top-level key


NOT_SENT = [
    ("rc-named-not-sent", MISTRAL_NEW, {R, RD}),
    ("rc-named-nothing-sent", GROQ_RC, set()),
    ("r-named-not-sent", GROQ_R, {RC, RD}),
    ("rd-named-not-sent", RELAY_RD, {RC, R}),
    ("rd-named-only-unrelated-sent", UNKNOWN_KEY, {"tool_calls", "content"}),
]


@pytest.mark.parametrize(("body", "sent"), [c[1:] for c in NOT_SENT], ids=[c[0] for c in NOT_SENT])
def test_named_carrier_must_have_been_sent(body: str, sent: set[str]) -> None:
    assert classify(400, body, sent=sent, must_echo=False) == Classification(action="none")


UNRELATED = [
    compact({"error": {"message": "Unknown parameter: 'web_search_options'.",
                       "type": "invalid_request_error", "param": "web_search_options",
                       "code": "unknown_parameter"}}),
    '{"detail":[{"type":"extra_forbidden","loc":["body","messages",1,"assistant","thinking"],'
    '"msg":"Extra inputs are not permitted","input":"…"}]}',
    "'messages.1' : for 'role:assistant' the following must be satisfied"
    "[('messages.1' : property 'reasoning_text' is unsupported)]",
    "Unknown parameter: 'messages[1].reasoning_contents_x'.",
    "unknown field `x_reasoning_details`, expected one of `role`, `content`",
    "Unknown parameter: 'messages[1].reasoning_effort'.",
    "Unknown parameter: 'messages[1].reasoning_opaque'.",
    # reasoning named outside the message path: the top-level parameter, not the carrier
    "messages.1.content: unknown field; 'reasoning' is a top-level parameter",
    "messages: unknown field 'reasoning'",
    "unknown key 'messages[1].reasoningContent'",
    # A carrier named, but no unknown-field wording: not a rejection of the field.
    compact({"error": {"message": "Invalid value for reasoning_content: expected a string",
                       "type": "invalid_request_error"}}),
    compact({"error": {"message": "messages.1.reasoning: Input should be a valid string"}}),
]


@pytest.mark.parametrize("body", UNRELATED)
def test_unrelated_fields_and_value_errors_are_not_rejections(body: str) -> None:
    assert classify(400, body, sent=ALL, must_echo=False) == Classification(action="none")


@pytest.mark.parametrize("body", [
    "Provider returned error",
    compact({"error": {"message": "Provider returned error", "code": 400}}),
    openrouter("upstream error", "Mistral"),
    openrouter(compact({"error": {"message": "reasoning_content: invalid"}}), "DeepSeek"),
    "",
])
def test_generic_provider_returned_error_is_not_a_rejection(body: str) -> None:
    assert classify(400, body, sent=ALL, must_echo=False) == Classification(action="none")
    assert classify(None, body, sent=ALL, must_echo=True) == Classification(action="none")


ERROR_FILES = sorted(ERRORS.glob("*.json"))


def test_error_fixtures_are_present() -> None:
    assert len(ERROR_FILES) == 19


@pytest.mark.parametrize("path", ERROR_FILES, ids=[p.name for p in ERROR_FILES])
@pytest.mark.parametrize("must_echo", [False, True])
def test_recorded_non_reasoning_4xx_bodies_are_not_rejections(path: Path, must_echo: bool) -> None:
    body = path.read_text(encoding="utf-8")
    assert classify(400, body, sent=ALL, must_echo=must_echo).action == "none"
    assert classify(400, openrouter(body, "Any"), sent=ALL, must_echo=must_echo).action == "none"


# --- widening and must-echo -----------------------------------------------------------------------

@pytest.mark.parametrize(("body", "sent", "drop"), [
    (MISTRAL_NEW, {RC}, ALL),          # RC named: every carrier, including ones not sent this time
    (MISTRAL_NEW, {RC, R}, ALL),
    (MISTRAL_NEW, ALL, ALL),
    (GROQ_R, {R}, {R}),                 # R named: the sent ones of {R, RD} together, RC kept
    (GROQ_R, {RC, R, RD}, {R, RD}),
    (RELAY_RD, {RD}, {RD}),             # RD named: likewise
    (RELAY_RD, {RC, R, RD}, {R, RD}),
    (RELAY_RD, {RC, RD}, {RD}),
])
def test_widening(body: str, sent: set[str], drop: set[str]) -> None:
    c = classify(400, body, sent=sent, must_echo=False)
    assert (c.action, c.drop) == ("drop", frozenset(drop))


@pytest.mark.parametrize("body", [MISTRAL_OLD, MISTRAL_NEW, GROQ_RC, CEREBRAS_RC, UNRECOGNIZED_RC,
                                  UNKNOWN_PARAM_RC, ADDITIONAL_PROPS, OPENROUTER_MISTRAL])
def test_must_echo_route_never_drops_reasoning_content(body: str) -> None:
    c = classify(400, body, sent={RC}, must_echo=True)
    assert (c.action, c.drop) == ("none", frozenset())
    assert c.wording  # noted for the log: a value complaint, not an unknown field
    assert "value complaint" in c.reason


def test_must_echo_route_still_drops_r_and_rd_named_beside_reasoning_content() -> None:
    body = ('{"detail":['
            '{"type":"extra_forbidden","loc":["body","messages",2,"assistant","reasoning_content"],'
            '"msg":"Extra inputs are not permitted","input":" "},'
            '{"type":"extra_forbidden","loc":["body","messages",2,"assistant","reasoning"],'
            '"msg":"Extra inputs are not permitted","input":"x"}]}')
    c = classify(422, body, sent={RC, R, RD}, must_echo=True)
    assert (c.action, c.drop) == ("drop", frozenset({R, RD}))
    assert c.reason == "rejected replayed reasoning as an extra input"
    # The same body on an ordinary route widens to every carrier.
    assert classify(422, body, sent={RC, R}, must_echo=False).drop == ALL


# --- notices --------------------------------------------------------------------------------------

def test_describe() -> None:
    rc = classify(422, MISTRAL_NEW, sent={RC}, must_echo=False)
    assert rc.reason == "rejected replayed reasoning_content as an extra input"
    assert describe(rc, model="mistral-large") == (
        "mistral-large rejected replayed reasoning_content as an extra input — retrying without "
        "any replayed reasoning for this model")
    r = classify(400, GROQ_R, sent={R}, must_echo=False)
    assert describe(r, model="qwen3-32b") == (
        "qwen3-32b rejected replayed reasoning as an unsupported property — retrying without it "
        "for this model")
    both = classify(400, UNKNOWN_FIELD, sent={R, RD}, must_echo=False)
    assert describe(both, model="m") == (
        "m rejected replayed reasoning_details as an unknown field — retrying without reasoning "
        "and reasoning_details for this model")
    pad = classify(400, DEEPSEEK_MISSING, sent=(), must_echo=False)
    assert describe(pad, model="deepseek-v4") == (
        "deepseek-v4 requires reasoning_content on assistant turns — retrying with the "
        "placeholder for this model")
    assert describe(Classification(action="none"), model="m") == ""
    assert describe(classify(400, DEEPSEEK_ANTHROPIC, sent=ALL, must_echo=False), model="m") == ""


def test_plural_reason_when_two_carriers_are_named() -> None:
    body = ("Unknown parameter: 'messages[1].reasoning'. "
            "Unknown parameter: 'messages[1].reasoning_details'.")
    c = classify(400, body, sent={R, RD}, must_echo=False)
    assert c.reason == "rejected replayed reasoning and reasoning_details as unknown parameters"
    assert describe(c, model="m").endswith("retrying without reasoning and reasoning_details for "
                                           "this model")


# --- the table itself -----------------------------------------------------------------------------

def test_every_table_row_has_a_positive_case() -> None:
    tested = ({c[-1] for c in DROP_CASES} | {c[-1] for c in PAD_CASES}
              | {"deepseek-anthropic-thinking-must-be-passed-back"})
    assert {w.id for w in WORDINGS} == tested


def test_table_rows_are_complete_and_unique() -> None:
    ids = [w.id for w in WORDINGS]
    assert len(ids) == len(set(ids))
    for w in WORDINGS:
        assert w.seen and w.source
        assert all(w.label) == (w.kind == "unknown_field")


# --- properties -----------------------------------------------------------------------------------

_statuses = st.one_of(st.none(), st.integers(min_value=-1000, max_value=1000))
_sent = st.sets(st.sampled_from([*CARRIERS, "content", "tool_calls", "thinking"]))
_bodies = st.one_of(
    st.text(),
    st.builds(lambda a, b, c: a + b + c, st.text(max_size=40),
              st.sampled_from(POSITIVE_BODIES + TOP_LEVEL_REASONING + UNRELATED),
              st.text(max_size=40)),
    st.lists(st.sampled_from([
        "messages", ".", "[1]", "/2", "assistant", "reasoning", "reasoning_content",
        "reasoning_details", "'", '"', "\\", "\\u0060", ":", " ", "property", "is unsupported",
        "unknown field", "Extra inputs are not permitted", ",", "2", "loc", "[", "]",
    ])).map("".join),
)


@given(status=_statuses, body=_bodies, sent=_sent, must_echo=st.booleans())
def test_never_raises_and_only_drops_what_was_sent(status: int | None, body: str, sent: set[str],
                                                  must_echo: bool) -> None:
    c = classify(status, body, sent=sent, must_echo=must_echo)
    assert c.action in ("none", "drop", "pad")
    assert c.drop <= ALL
    if c.action != "drop":
        assert c.drop == frozenset()
        return
    assert c.drop & sent, "a drop needs a named carrier that was sent"
    # Only the reasoning_content widening may name carriers this request did not carry.
    assert c.drop <= sent or (RC in sent and not must_echo and c.drop == ALL)
    if must_echo:
        assert RC not in c.drop
    assert status is None or 400 <= status <= 499
    assert describe(c, model="m")
