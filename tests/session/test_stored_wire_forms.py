"""Issue 17: resume splices each turn's stored wire form instead of re-encoding.

- a property: for random histories and plan changes, the spliced body of a resumed session is
  byte-identical to a fresh encode of the same history (and the resume decoded nothing);
- a stored wire form whose digest fails is discarded, reported and rebuilt — never sent;
- a plan change (a learned verdict, ``/model``) re-encodes once and stores the new forms, so the
  next resume splices again;
- a resume reads no canonical row: with its form intact, a damaged canonical row changes nothing
  sent (the form is a verified copy of what the message encoded to); decoding the history
  verifies every row, reports exactly what is damaged and leaves it out from then on.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from helpers_forms import FORM_FAILED, drop_stored_forms, forge_stored_form
from test_properties_openai_chat import HISTORIES
from thoughtline import ProviderConfig, Session, open_store
from thoughtline.codecs import registry
from thoughtline.codecs.base import RequestSpec
from thoughtline.codecs.openai_chat import encode_request
from thoughtline.codecs.openai_chat.profile import resolve_chat
from thoughtline.messages import Message, user
from thoughtline.replay import answered
from thoughtline.replay import plan as make_plan
from thoughtline.wire.stored import Joined

PROVIDERS = st.sampled_from([
    ProviderConfig(id="deepseek", base_url="https://api.deepseek.com", model="deepseek-reasoner"),
    ProviderConfig(id="openrouter", base_url="https://openrouter.ai/api/v1", model="m"),
    ProviderConfig(id="mistral", base_url="https://api.mistral.ai/v1", model="magistral"),
    ProviderConfig(id="gemini-openai", base_url="https://generativelanguage.googleapis.com/"
                   "v1beta/openai", model="gemini-3-pro"),
    # Responses stores its turns' input items the same way (its flat TurnEncoder, wire.cache).
    ProviderConfig(id="openai-responses", api="openai-responses",
                   base_url="https://api.openai.com/v1", model="gpt-5.5"),
    ProviderConfig(id="xai-responses", api="openai-responses", base_url="https://api.x.ai/v1",
                   model="grok-4"),
    # Bedrock Converse: turns merged by role into messages (codecs/bedrock/turns, wire.cache).
    ProviderConfig(id="bedrock", api="bedrock", base_url="", auth="sigv4:bedrock",
                   model="us.anthropic.claude-sonnet-4-5-20250929-v1:0"),
    ProviderConfig(id="bedrock", api="bedrock", base_url="", auth="sigv4:bedrock",
                   model="openai.gpt-oss-120b-1:0"),
    # Gemini: a result depends on the call it answers (codecs/gemini/turns; its own property in
    # tests/gemini covers Gemini-shaped histories).
    ProviderConfig(id="gemini", api="gemini", auth="x-goog-api-key", model="gemini-3-pro-preview",
                   base_url="https://generativelanguage.googleapis.com/v1beta"),
    # Anthropic: forms record the thinking and binding context they were encoded under
    # (codecs/anthropic/forms; its own property in tests/anthropic covers Claude histories).
    ProviderConfig(id="anthropic", api="anthropic", base_url="https://api.anthropic.com",
                   model="claude-opus-4-5"),
    ProviderConfig(id="anthropic", api="anthropic", base_url="https://api.anthropic.com",
                   model="claude-sonnet-4-5"),
    # Interactions: each turn's steps stored; where the server's chain continues is read from
    # the turns' stored facts (what each says, its stamp), nothing decoded.
    ProviderConfig(id="gemini-interactions", api="gemini-interactions",
                   base_url="https://generativelanguage.googleapis.com/v1beta",
                   model="gemini-3-pro-preview", auth="x-goog-api-key"),
])
PENDING = user("and the next step?")


def _fresh_bytes(history: list[Message], provider: ProviderConfig) -> bytes:
    """What a fresh session builds: the same view (unanswered calls answered), encoded anew."""
    view = list(answered(history, [PENDING]))
    if provider.api == "openai-chat":
        route = resolve_chat(provider.id, provider.base_url, provider.model)
        return orjson.dumps(encode_request(view, make_plan(route), model=provider.model,
                                           stream=True))
    codec = registry.codec(provider.api)
    route = codec.resolve(provider.route_id, provider.base_url, provider.model)
    return codec.encode_request(view, make_plan(route), RequestSpec(model=provider.model,
                                                                    stream=True)).raw


def test_the_property_covers_every_api_that_stores_forms() -> None:
    """Each codec with stored wire forms — one with a turn encoder, which the wire cache stores
    each turn's form through — is in PROVIDERS (a new one must join the property)."""
    storing = {api for api in registry.apis() if registry.codec(api).turns is not None}
    assert storing, "no codec stores wire forms: the property below would cover nothing"
    assert storing <= {p.api for p in PROVIDERS.elements}


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
@given(history=HISTORIES, first=PROVIDERS, second=PROVIDERS)
def test_a_spliced_resume_is_byte_identical_to_a_fresh_encode(
        tmp_path_factory, history: list[Message], first: ProviderConfig,  # type: ignore[no-untyped-def]
        second: ProviderConfig) -> None:
    home = tmp_path_factory.mktemp("forms")
    with open_store(home / "state.db", home) as store:
        session = Session.create(store, first)
        session.append(history)
        resumed = Session.resume(store, session.id)
        assert resumed.request_bytes([PENDING], stream=True) == _fresh_bytes(history, first)
        # Nothing was decoded to build it (a history with an unanswered tool call is the one
        # exception: answering it builds a new view from the decoded turns).
        settled = isinstance(answered(history, [PENDING]), Joined)
        assert resumed._history.decoded is not settled
        # A plan change re-encodes (correctly), stores the new forms, and splices next time.
        resumed.set_provider(second)
        assert resumed.request_bytes([PENDING], stream=True) == _fresh_bytes(history, second)
        resumed.append([user("more")])
        again = Session.resume(store, session.id)
        expected = _fresh_bytes([*history, user("more")], second)
        assert again.request_bytes([PENDING], stream=True) == expected
        assert again._history.decoded is not settled


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
@given(history=HISTORIES, provider=PROVIDERS, lost=st.sets(st.integers(0, 7), max_size=3))
def test_a_resume_whose_forms_stop_mid_history_encodes_on_from_there(
        tmp_path_factory, history: list[Message], provider: ProviderConfig,  # type: ignore[no-untyped-def]
        lost: set[int]) -> None:
    """A stored turn without a form (its rows gone): the resumed walk splices the turns before
    it, in the state they leave, and encodes from it on, byte for byte as a fresh encode."""
    home = tmp_path_factory.mktemp("lost")
    with open_store(home / "state.db", home) as store:
        session = Session.create(store, provider)
        session.append(history)
        ids = list(session._ids or ())
    drop_stored_forms(home / "state.db", [ids[i] for i in sorted(lost) if i < len(ids)])
    with open_store(home / "state.db", home) as store:
        resumed = Session.resume(store, session.id)
        assert resumed.request_bytes([PENDING], stream=True) == _fresh_bytes(history, provider)
        resumed.append([user("more")])
        expected = _fresh_bytes([*history, user("more")], provider)
        assert resumed.request_bytes([PENDING], stream=True) == expected
        # What it wrote through is each turn's form under its own context.
        again = Session.resume(store, session.id)
        assert again.request_bytes([PENDING], stream=True) == expected


def test_a_corrupt_wire_form_is_reported_rebuilt_and_never_sent(tmp_path: Path) -> None:
    provider = ProviderConfig(id="deepseek", base_url="https://api.deepseek.com",
                              model="deepseek-reasoner")
    history = [user("q"), Message(role="assistant", parts=())]
    from thoughtline.messages import Reasoning, Text

    history[1] = Message(role="assistant", parts=(Reasoning(kind="text", text="thinking"),
                                                  Text(text="answer")))
    with open_store(tmp_path / "state.db", tmp_path) as store:
        session = Session.create(store, provider)
        session.append(history)
    forge_stored_form(tmp_path / "state.db", b"answer", b"FORGED")
    with open_store(tmp_path / "state.db", tmp_path) as store:
        resumed = Session.resume(store, session.id)
        assert [p.detail for p in resumed.problems] == [FORM_FAILED]
        body = resumed.request_bytes([PENDING], stream=True)
    assert b"FORGED" not in body and b'"content":"answer"' in body
    assert body == _fresh_bytes(history, provider)


def test_a_damaged_canonical_row_is_found_when_decoded_and_never_sent(tmp_path: Path) -> None:
    provider = ProviderConfig(id="openrouter", base_url="https://openrouter.ai/api/v1", model="m")
    from thoughtline.messages import Origin, Reasoning, Text

    origin = Origin(api="openai-chat", provider="openrouter", host="openrouter.ai", model="m")
    item = {"type": "reasoning.encrypted", "data": "gAAAA-blob", "format": "unknown", "index": 0}
    turn = Message(role="assistant", origin=origin, parts=(
        Reasoning(kind="encrypted", data="gAAAA-blob", origin=origin,
                  native={"openrouter": item}), Text(text="done")))
    with open_store(tmp_path / "state.db", tmp_path) as store:
        session = Session.create(store, provider)
        session.append([user("q"), turn])
        before = session.request_bytes([PENDING], stream=True)
    raw = sqlite3.connect(tmp_path / "state.db", isolation_level=None)
    for (blob,) in raw.execute("SELECT data FROM payloads").fetchall():
        if b"gAAAA-blob" in bytes(blob):
            raw.execute("UPDATE payloads SET data = ? WHERE data = ?",
                        (bytes(blob).replace(b"gAAAA-blob", b"tampered"), blob))
    raw.close()
    with open_store(tmp_path / "state.db", tmp_path) as store:
        resumed = Session.resume(store, session.id)
        # The resume read the verified form, not the damaged row: the value as it was issued.
        assert resumed.problems == ()
        assert resumed.request_bytes([PENDING], stream=True) == before
        assert b"gAAAA-blob" in before
        # Decoding verifies every canonical row: the damage is reported, and left out after.
        assert len(resumed.history) == 2
        assert resumed.problems and all("corrupt" in p.detail for p in resumed.problems)
        body = resumed.request_bytes([PENDING], stream=True)
    assert b"gAAAA-blob" not in body and b"tampered" not in body


DEEPSEEK = ProviderConfig(id="deepseek", base_url="https://api.deepseek.com",
                          model="deepseek-reasoner")


def _call(call_id: str) -> Message:
    from thoughtline.messages import ToolCall

    return Message(role="assistant", parts=(ToolCall(id=call_id, name="f", arguments="{}"),))


def _answered_loop(n: int) -> list[Message]:
    from thoughtline.messages import ToolResult, tool_results

    out: list[Message] = []
    for i in range(n):
        out += [user(f"q{i}"), _call(f"call_{i}"),
                tool_results([ToolResult(call_id=f"call_{i}", content="ok")])]
    return out


def test_a_resume_starts_the_unanswered_call_scan_where_the_stored_one_ended(
        tmp_path: Path) -> None:
    history = _answered_loop(5)
    with open_store(tmp_path / "state.db", tmp_path) as store:
        session = Session.create(store, DEEPSEEK)
        session.append(history)
        resumed = Session.resume(store, session.id)
        assert resumed.request_bytes([PENDING], stream=True) == _fresh_bytes(history, DEEPSEEK)
        assert not resumed._history._facts  # no stored turn's meta was read to scan
        assert resumed._history.decoded is False


def test_the_stored_scan_keeps_an_unanswered_call_in_the_middle(tmp_path: Path) -> None:
    # The tool-results request of call_x failed; the user went on: every later request answers
    # call_x with an error result, also after a resume that reads the scan instead of the turns.
    history = [*_answered_loop(2), user("q"), _call("call_x"), user("never mind"),
               *_answered_loop(1)]
    with open_store(tmp_path / "state.db", tmp_path) as store:
        session = Session.create(store, DEEPSEEK)
        session.append(history)
        resumed = Session.resume(store, session.id)
        body = resumed.request_bytes([PENDING], stream=True)
    assert body == _fresh_bytes(history, DEEPSEEK)
    assert body.count(b'"tool_call_id":"call_x"') == 1


def test_a_damaged_stored_scan_is_ignored_and_the_turns_are_scanned(tmp_path: Path) -> None:
    history = [*_answered_loop(2), user("q"), _call("call_x"), user("go on")]
    with open_store(tmp_path / "state.db", tmp_path) as store:
        session = Session.create(store, DEEPSEEK)
        session.append(history)
    raw = sqlite3.connect(tmp_path / "state.db", isolation_level=None)
    changed = raw.execute("UPDATE wire_forms SET data = ? WHERE plan LIKE 'scan:%'",
                          (b'{"p":[],"r":[]}',)).rowcount
    raw.close()
    assert changed >= 1
    with open_store(tmp_path / "state.db", tmp_path) as store:
        resumed = Session.resume(store, session.id)
        assert resumed._history.scan is None  # its digest failed: not used
        body = resumed.request_bytes([PENDING], stream=True)
    assert body == _fresh_bytes(history, DEEPSEEK)
    assert b'"tool_call_id":"call_x"' in body


def test_an_unanswered_call_added_after_a_resume_is_answered(tmp_path: Path) -> None:
    with open_store(tmp_path / "state.db", tmp_path) as store:
        session = Session.create(store, DEEPSEEK)
        session.append(_answered_loop(1))
        resumed = Session.resume(store, session.id)
        resumed.append([user("q2"), _call("call_late")])  # its results' request then failed
        body = resumed.request_bytes([PENDING], stream=True)
        expected = _fresh_bytes([*_answered_loop(1), user("q2"), _call("call_late")], DEEPSEEK)
    assert body == expected
    assert b'"tool_call_id":"call_late"' in body


def test_a_tampered_meta_fails_the_form_digest_like_tampered_bytes(tmp_path: Path) -> None:
    # A codec trusts a form's meta (counts, roles, the context it was encoded under) as much as
    # its bytes: the digest covers both, so a changed meta is reported and rebuilt, never used.
    history = _answered_loop(2)
    with open_store(tmp_path / "state.db", tmp_path) as store:
        session = Session.create(store, DEEPSEEK)
        session.append(history)
    raw = sqlite3.connect(tmp_path / "state.db", isolation_level=None)
    # (the turn's facts are stored under named fields: "opens" = a user turn opening a loop)
    changed = raw.execute("UPDATE wire_forms SET meta = replace(meta, '\"opens\":true', "
                          "'\"opens\":false') WHERE meta LIKE '%\"opens\":true%' "
                          "AND plan NOT LIKE 'scan:%'").rowcount
    raw.close()
    assert changed == 2  # the two questions' forms
    with open_store(tmp_path / "state.db", tmp_path) as store:
        resumed = Session.resume(store, session.id)
        assert len(resumed.problems) == 2
        assert all("failed its digest" in p.detail for p in resumed.problems)
        assert resumed.request_bytes([PENDING], stream=True) == _fresh_bytes(history, DEEPSEEK)
