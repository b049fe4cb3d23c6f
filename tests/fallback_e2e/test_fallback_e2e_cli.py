"""The learn-once fallback through the real ``thoughtline`` entry point, in a throwaway home.

The provider is a custom one from config.toml (``[providers.relay]``) at a loopback strict server
the route table takes for a local server (reasoning_content + reasoning). Each ``thoughtline``
command is a new process: what it knows comes from the store, never from this process's memory.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from fallback_e2e_support import (
    LOOKUP,
    RC,
    R,
    answer_call,
    any_carrier,
    assistants,
    carried,
    cli,
    cli_ok,
    cli_read,
    create,
    provider_at,
    request_log,
    resume,
    send,
    statuses,
    store_at,
    write_config,
)

from thoughtline import config
from thoughtline.replay import Verdict
from thoughtline.testing import ChatEmulator

Start = Callable[[str], ChatEmulator]
DROPPED = [R, RC]  # sorted, as stored
REASON = "rejected replayed reasoning_content and reasoning as unsupported properties"
NOTICE = (f"relay-model {REASON} — retrying without any replayed reasoning for this model")
VERDICT = Verdict(provider="relay", host="127.0.0.1", model="relay-model",
                  drop=frozenset(DROPPED), reason=REASON)


def chat(home: Path, *args: str) -> tuple[str, str]:
    result = cli_ok(home, "chat", *args)
    return result.stdout, result.stderr


def learned(routes_text: str) -> list[str]:
    """The lines of ``thoughtline routes`` output that say what was learned."""
    return [line for line in routes_text.splitlines()
            if line.startswith(("learned:", "effective on the wire:"))]


def test_done_when_a_tool_session_takes_exactly_one_rejection_in_its_whole_life(
        emulator: Start, home: Path) -> None:
    emu = emulator("strict-custom")
    write_config(home, emu.base_url)
    prov = config.provider("relay", config.load_config(home))
    assert (prov.id, prov.base_url, prov.model) == ("relay", emu.base_url, "relay-model")

    # The tool loop (tools can only be offered through the library), logged into the same home.
    store = store_at(home)
    session = create(store, prov, tools=[LOOKUP], title="tool session", log=request_log(home))
    assert session.route.row == "local-endpoint" and session.route.profile.carriers == {RC, R}
    outcomes = [send(session, "weather in Paris"), send(session, answer_call(session, "sunny")),
                send(session, "and in Rome?"), send(session, answer_call(session, "rain"))]
    assert [o.error for o in outcomes] == [None] * 4
    assert [len(o.notices) for o in outcomes] == [0, 1, 0, 0]
    assert outcomes[1].notices == [NOTICE]
    assert statuses(emu.received) == [200, 400, 200, 200, 200]
    rejected, retry = emu.received[1:3]
    assert carried(rejected) == [{RC, R}] and carried(retry) == [frozenset()]
    store.close()

    # --resume in a new process: the tools come back from the session, the fields stay dropped.
    out, err = chat(home, "-r", session.id, "-p", "and in Oslo?")
    assert "→ tool call: lookup" in out and "retrying" not in err
    resumed = resume(store_at(home), session.id, log=request_log(home))
    assert send(resumed, answer_call(resumed, "snow")).error is None  # the loop goes on
    assert [len(assistants(r)) for r in emu.received[5:]] == [4, 5]

    # A brand-new session in new processes starts from the ledger.
    chat(home, "--provider", "relay", "-p", "hello")
    out, err = chat(home, "-c", "-p", "tell me more")
    assert "Scripted answer" in out and "retrying" not in err
    assert len(assistants(emu.received[-1])) == 1

    # The whole life: exactly one rejected request; everything after it carries no RC / R.
    assert statuses(emu.received) == [200, 400] + [200] * 7
    assert all(any_carrier(r) == frozenset() for r in emu.received[2:])

    # What the user can see, each read by its own process.
    all_logs, session_log, routes_text, routes_data, shown_data, shown_text = cli_read(
        home, ["logs", "--json"], ["logs", "--session", session.id[:8]],
        ["routes", "--provider", "relay", "--session", session.id],
        ["routes", "--provider", "relay", "--session", session.id, "--json"],
        ["sessions", "show", session.id, "--json"], ["sessions", "show", session.id])

    # The request log: the rejection, then the retry with the verdict; nothing else learned.
    everything = [json.loads(line) for line in all_logs.splitlines()]
    assert [r["status"] for r in everything].count(400) == 1
    assert [r for r in everything if r["verdicts"]] == [
        r for r in everything if r["attempt"] == 2]
    records = [r for r in everything if r["session"] == session.id]
    assert [(r["status"], r["attempt"]) for r in records] == [
        (200, 1), (400, 1), (200, 2), (200, 1), (200, 1), (200, 1), (200, 1)]
    assert records[1]["carriers"] == {RC: 1, R: 1} and records[1]["verdicts"] == []
    assert records[2]["verdicts"] == [VERDICT.to_json()] and records[2]["carriers"] == {}
    assert "learned: drop reasoning,reasoning_content; fallback retry" in session_log
    assert len(session_log.splitlines()) == len(records)

    # routes --session (text and JSON) and sessions show list the learned verdict.
    assert learned(routes_text) == [
        f"learned: stop sending reasoning, reasoning_content ({REASON})",
        "effective on the wire: nothing"]
    data = json.loads(routes_data)
    assert data["carriers"] == [R, RC]
    assert data["verdicts"] == [VERDICT.to_json()]
    assert (data["effective_carriers"], data["effective_must_echo"]) == ([], False)
    assert json.loads(shown_data)["verdicts"] == [VERDICT.to_json()]
    lines = [line.strip() for line in shown_text.splitlines()]
    assert lines[lines.index("learned verdicts:") + 1] == \
        f"relay @ 127.0.0.1 / relay-model: drop reasoning, reasoning_content  ({REASON})"


def test_chat_prints_a_one_line_notice_once_and_never_again(emulator: Start,
                                                             home: Path) -> None:
    emu = emulator("strict-custom")
    write_config(home, emu.base_url)

    # --show-reasoning keeps the reasoning on stdout, so stderr holds the notice alone.
    out, err = chat(home, "--provider", "relay", "--show-reasoning", "-p", "hello")
    assert "Scripted answer" in out and err == ""
    out, err = chat(home, "-c", "--show-reasoning", "-p", "again")
    assert "Scripted answer" in out
    assert err.splitlines() == [NOTICE]  # exactly one line, on stderr only
    assert NOTICE not in out
    # Later turns (here -p --json, whose stdout is one JSON object): no rejection, no notice.
    out, err = chat(home, "-c", "-p", "and again", "--json")
    assert json.loads(out)["reply"]["text"].startswith("Scripted answer") and err == ""
    assert statuses(emu.received) == [200, 400, 200, 200]
    assert carried(emu.received[1]) == [{RC, R}]
    assert all(any_carrier(r) == frozenset() for r in emu.received[2:])


def test_routes_forget_clears_the_ledger_and_a_new_session_sends_the_field_again(
        emulator: Start, home: Path) -> None:
    emu = emulator("strict-custom")
    write_config(home, emu.base_url)
    prov = config.provider("relay", config.load_config(home))
    first = create(store_at(home), prov)
    assert send(first, "hello").error is None
    assert send(first, "again").notices == [NOTICE]  # learned: 400, retry
    assert statuses(emu.received) == [200, 400, 200]
    first.store.close()

    assert cli_ok(home, "routes", "forget").stdout == "forgot 1 verdict\n"
    ledger, own = cli_read(home, ["routes", "--provider", "relay"],
                           ["routes", "--provider", "relay", "--session", first.id])
    assert learned(ledger) == []  # the ledger is empty …
    assert learned(own) == [f"learned: stop sending reasoning, reasoning_content ({REASON})",
                            "effective on the wire: nothing"]  # … the session keeps its copy

    old = resume(store_at(home), first.id)
    assert send(old, "still there?").error is None
    assert statuses(emu.received)[3:] == [200]  # the old session: no rejection
    # A brand-new session sends the field again — and learns again, once.
    fresh = create(store_at(home), prov)
    assert send(fresh, "new").error is None
    assert send(fresh, "new again").notices == [NOTICE]
    assert statuses(emu.received)[4:] == [200, 400, 200]
    assert carried(emu.received[5]) == [{RC, R}]


def test_routes_forget_filters(emulator: Start, home: Path) -> None:
    lenient = emulator("plain")  # shows what a new session sends, without rejecting it
    write_config(home, lenient.base_url)
    store = store_at(home)
    keys = [("relay", "127.0.0.1", "relay-model"), ("relay", "127.0.0.1", "relay-model-mini"),
            ("relay", "10.0.0.7", "relay-model"), ("groq", "api.groq.com", "qwen/qwen3-32b")]
    for provider, host, model in keys:
        store.record_verdict(Verdict(provider=provider, host=host, model=model,
                                     drop=frozenset(DROPPED), reason=REASON))
    store.close()

    def remaining() -> list[tuple[str, str, str]]:
        with_store = store_at(home)
        try:
            return [v.key for v in with_store.verdicts()]
        finally:
            with_store.close()

    def forget(*args: str) -> str:
        return cli_ok(home, "routes", "forget", *args).stdout.strip()

    assert forget("--provider", "nobody") == "forgot 0 verdicts"
    assert forget("--provider", "RELAY", "--host", "127.0.0.1", "--model", "relay-model") \
        == "forgot 1 verdict"
    assert remaining() == sorted(keys[1:])
    # What a new session sends now: the forgotten key the field again, the kept key still not.
    for model, expected in (("relay-model", [{RC, R}]), ("relay-model-mini", [frozenset()])):
        fresh = create(store_at(home), provider_at(lenient, "relay", model))
        assert send(fresh, "hello").error is None and send(fresh, "again").error is None
        assert carried(lenient.received[-1]) == expected
    assert forget("--host", "10.0.0.7") == "forgot 1 verdict"
    assert forget("--model", "qwen/qwen3-32b") == "forgot 1 verdict"
    assert remaining() == [keys[1]]
    assert forget() == "forgot 1 verdict"
    assert remaining() == []
    assert cli(home, "routes", "forget", "--provider").returncode != 0  # a filter needs a value
