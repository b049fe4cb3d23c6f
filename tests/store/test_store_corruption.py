"""Damaged rows are detected on load: a bad payload drops its part and is reported; a bad skeleton
refuses to load the session with a message that says what to do."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from store_backends import Backend
from store_samples import gemini_turn, signed_turn

from thoughtline.errors import CorruptPayload
from thoughtline.messages import Reasoning, ToolCall, digest, user
from thoughtline.store import encode_message
from thoughtline.store.codec import MESSAGE_LEVEL


def _flip(data: bytes) -> bytes:
    middle = len(data) // 2
    return data[:middle] + bytes([data[middle] ^ 0x01]) + data[middle + 1:]


def _truncate(data: bytes) -> bytes:
    return data[:-1]


def _damage_payload(backend: Backend, key: str, how: Callable[[bytes], bytes] | None) -> None:
    if how is None:
        backend.sql("DELETE FROM payloads WHERE digest = ?", [key])
        return
    (row,) = backend.sql("SELECT data FROM payloads WHERE digest = ?", [key])
    backend.sql("UPDATE payloads SET data = ? WHERE digest = ?", [how(bytes(row[0])), key])


def _ref(turn_index: int, field: str):  # type: ignore[no-untyped-def]
    turn = signed_turn()
    return next(r for r in encode_message(turn).refs if (r.part, r.field) == (turn_index, field))


@pytest.mark.parametrize("how", [_flip, _truncate, None], ids=["flip", "truncate", "delete"])
def test_bad_reasoning_payload_drops_exactly_that_part(backend: Backend, how) -> None:  # type: ignore[no-untyped-def]
    sid = backend.store.create_session().id
    backend.store.append(sid, [user("q"), signed_turn(), user("next")])
    ref = _ref(2, "data")  # the redacted thinking block
    _damage_payload(backend, ref.digest, how)

    loaded = backend.store.load_history(sid)

    (problem,) = loaded.problems
    assert (problem.seq, problem.part, problem.digest) == (1, 2, ref.digest)
    assert "not be sent" in problem.detail or "not loaded" in problem.detail
    kept = loaded.messages[1].message.parts
    expected = tuple(p for i, p in enumerate(signed_turn().parts) if i != 2)
    assert kept == expected
    assert [m.message for m in loaded.messages[::2]] == [user("q"), user("next")]


def test_bad_tool_call_native_keeps_the_call_without_it(backend: Backend) -> None:
    sid = backend.store.create_session().id
    backend.store.append(sid, [signed_turn()])
    ref = _ref(3, "native")
    _damage_payload(backend, ref.digest, _flip)

    loaded = backend.store.load_history(sid)

    assert [(p.seq, p.part, p.digest) for p in loaded.problems] == [(0, 3, ref.digest)]
    call = loaded.messages[0].message.parts[3]
    assert isinstance(call, ToolCall)
    assert (call.id, call.arguments, call.native) == ("toolu_02", "{}", {})
    assert loaded.messages[0].message.parts[:3] == signed_turn().parts[:3]


def test_bad_message_native_is_reported_at_message_level(backend: Backend) -> None:
    sid = backend.store.create_session().id
    backend.store.append(sid, [gemini_turn()])
    ref = next(r for r in encode_message(gemini_turn()).refs if r.part == MESSAGE_LEVEL)
    _damage_payload(backend, ref.digest, None)

    loaded = backend.store.load_history(sid)

    assert [(p.part, p.digest) for p in loaded.problems] == [(MESSAGE_LEVEL, ref.digest)]
    message = loaded.messages[0].message
    assert message.native == {}
    assert message.parts == gemini_turn().parts


def test_a_payload_shared_by_two_turns_is_reported_for_each(backend: Backend) -> None:
    sid = backend.store.create_session().id
    backend.store.append(sid, [signed_turn(), user("x"), signed_turn()])
    ref = _ref(0, "signature")
    _damage_payload(backend, ref.digest, _truncate)

    loaded = backend.store.load_history(sid)

    assert [(p.seq, p.part) for p in loaded.problems] == [(0, 0), (2, 0)]
    for seq in (0, 2):
        assert not any(isinstance(p, Reasoning) and p.kind == "signed"
                       for p in loaded.messages[seq].message.parts)


def test_appending_the_same_content_again_heals_a_damaged_payload(backend: Backend) -> None:
    sid = backend.store.create_session().id
    backend.store.append(sid, [signed_turn()])
    ref = _ref(0, "signature")
    _damage_payload(backend, ref.digest, _flip)
    assert backend.store.load_history(sid).problems

    backend.store.append(backend.store.create_session().id, [signed_turn()])

    healed = backend.store.load_history(sid)
    assert healed.problems == ()
    assert healed.messages[0].message == signed_turn()


@pytest.mark.parametrize("damage", ["flip", "garbage"])
def test_corrupt_skeleton_raises_with_what_to_do(backend: Backend, damage: str) -> None:
    sid = backend.store.create_session().id
    backend.store.append(sid, [user("fine"), signed_turn()])
    key = encode_message(signed_turn()).id
    (row,) = backend.sql("SELECT skeleton FROM messages WHERE digest = ?", [key])
    if damage == "flip":
        bad = _flip(bytes(row[0]))
        backend.sql("UPDATE messages SET skeleton = ? WHERE digest = ?", [bad, key])
    else:  # unparsable bytes whose digest was "fixed up" too: still refused
        bad = b"{not json"
        backend.sql("UPDATE messages SET skeleton = ?, skeleton_digest = ? WHERE digest = ?",
                    [bad, digest(bad), key])

    with pytest.raises(CorruptPayload) as caught:
        backend.store.load_history(sid)

    text = str(caught.value)
    assert sid in text and key in text and "position 1" in text
    assert "branch" in text.lower() and "export" in text
    # The advice works: a branch before the damaged turn loads, and can be continued.
    branch = backend.store.branch(sid, at=1).id
    backend.store.append(branch, [user("again")])
    assert [m.message for m in backend.store.load_history(branch).messages] == [
        user("fine"), user("again")]
