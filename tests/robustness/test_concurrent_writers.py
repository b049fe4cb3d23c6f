"""Item 9: two writers continuing one session from the same history never produce a history no
model saw. The store checks the session head inside the append transaction; the later writer's
turn is stored as a branch from the history it was written against, and the CLI says so.

Deterministic: the two "processes" are two sessions resumed from the same point; which one
writes first is fixed by the test, not by timing.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from cli_support import Cli

from thoughtline import ProviderConfig, Session, open_store
from thoughtline.messages import user
from thoughtline.testing import ChatEmulator


@pytest.fixture(scope="module")
def emu() -> Iterator[ChatEmulator]:
    with ChatEmulator("deepseek", require_auth=False) as emulator:
        yield emulator


def test_append_checks_the_head_in_its_transaction(tmp_path: Path) -> None:
    from thoughtline.errors import HeadMoved

    store = open_store(tmp_path / "state.db", tmp_path)
    try:
        sid = store.create_session(title="t").id
        store.append(sid, [user("a")], expect_turns=0)
        with pytest.raises(HeadMoved) as caught:
            store.append(sid, [user("b")], expect_turns=0)
        assert (caught.value.expected, caught.value.found) == (0, 1)
        assert [m.message.text for m in store.load_history(sid).messages] == ["a"]
        store.append(sid, [user("b")], expect_turns=1)
        assert store.get_session(sid).turns == 2
    finally:
        store.close()


def test_the_later_of_two_writers_is_stored_as_a_branch(tmp_path: Path,
                                                        emu: ChatEmulator) -> None:
    store = open_store(tmp_path / "state.db", tmp_path)
    provider = ProviderConfig(id="deepseek", base_url=emu.base_url, model="deepseek-reasoner")

    async def scenario() -> tuple[str, str, str]:
        first = Session.create(store, provider, title="shared")
        await first.send("opening question")
        one = Session.resume(store, first.id)
        two = Session.resume(store, first.id)  # both loaded the same 2-turn history
        try:
            await one.send("from process one")
            await two.send("from process two")
        finally:
            for session in (first, one, two):
                await session.aclose()
        return first.id, one.id, two.id

    try:
        original, one, two = asyncio.run(scenario())
        assert one == original and two != original
        main = [m.message.text for m in store.load_history(original).messages]
        branch_record = store.get_session(two)
        branch = [m.message for m in store.load_history(two).messages]
    finally:
        store.close()
    assert main[2] == "from process one" and len(main) == 4
    assert branch_record.parent_id == original and branch_record.fork_point == 2
    assert [m.text for m in branch][:3] == [main[0], main[1], "from process two"]
    # What process two's model saw is exactly what its branch now holds before its answer.
    [request] = [r for r in emu.received if r.body["messages"][-1].get("content")
                 == "from process two"]
    assert [m["role"] for m in request.body["messages"]] == ["user", "assistant", "user"]
    assert len(branch) == 4


def test_concurrent_cli_continues_are_never_a_silent_fork(cli: Cli, emu: ChatEmulator) -> None:
    """Several ``chat -c`` at once: whatever the interleaving, every stored history is one the
    model answered (each assistant answer follows exactly the messages its request carried)."""
    import subprocess

    from cli_support import ENTRY

    first = cli.json("chat", "--provider", "deepseek", "--base-url", emu.base_url, "-p",
                     "start", "--json")
    procs = [subprocess.Popen([*ENTRY, "chat", "-c", "-p", f"parallel {n}", "--json"],
                              stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, env=cli.environ())
             for n in range(4)]
    outputs = [p.communicate(timeout=60) for p in procs]
    assert all(p.returncode == 0 for p in procs), outputs
    sessions = {json.loads(out)["session"] for out, _ in outputs}
    assert first["session"] in {s["id"] for s in cli.sessions()}
    for sid in sessions | {first["session"]}:
        exported = json.loads(cli.invoke("sessions", "export", sid).stdout)["messages"]
        users = [i for i, m in enumerate(exported) if m["role"] == "user"]
        for index in users[1:]:
            prompt = exported[index]["parts"][0]["text"]
            [request] = [r for r in emu.received
                         if r.body["messages"][-1].get("content") == prompt]
            assert len(request.body["messages"]) == index + 1, (sid, prompt)
    forked = [err for _, err in outputs if "stored as a new branch" in err]
    assert len(forked) == len(sessions - {first["session"]})
