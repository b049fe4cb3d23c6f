"""A gateway session is titled from the client's first user message, with the upstream and the
tenant's label beside it (issue 31 item 6): `sessions list` tells gateway conversations apart and
`sessions show` can find one by its title, where every one used to be titled "gateway"."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner
from gateway_support import MODEL, running_gateway

from thoughtline.cli.main import cli
from thoughtline.gateway.tenancy import tenant_id
from thoughtline.testing import ChatEmulator

ALICE = "token-alice-5b1e"


def _ask(gw, text: str, token: str = "none") -> str:
    reply = gw.client(token).chat.completions.with_raw_response.create(
        model=MODEL, messages=[{"role": "system", "content": "be brief"},
                               {"role": "user", "content": text}])
    return reply.headers["x-thoughtline-session"]


def test_gateway_sessions_are_titled_by_their_first_user_message(
        deepseek: ChatEmulator, tmp_path: Path) -> None:
    long = "Why does   the build\nfail on Tuesdays " + "and only then " * 8
    with running_gateway(deepseek, tmp_path) as gw:
        first = _ask(gw, "Plan the migration")
        second = _ask(gw, long)
        titles = {r.id: r.title for r in gw.store.list_sessions()}
    assert titles[first] == "Plan the migration (via ds)"
    shown = titles[second]
    assert shown.startswith("Why does the build fail on Tuesdays and only then")  # one line
    assert "\n" not in shown and shown.endswith("… (via ds)")
    assert len(shown) <= 60 + len(" (via ds)")  # at most 60 characters of the message
    result = CliRunner().invoke(cli, ["--home", str(tmp_path), "sessions", "show",
                                      "Plan the migration (via ds)"])
    assert result.exit_code == 0, result.output  # a title names one session, not every one


def test_a_tenants_session_shows_its_label_never_its_token(
        deepseek: ChatEmulator, tmp_path: Path) -> None:
    with running_gateway(deepseek, tmp_path, tokens=[ALICE]) as gw:
        session = _ask(gw, "hello", token=ALICE)
        (record,) = [r for r in gw.store.list_sessions(tenant=tenant_id(ALICE))
                     if r.id == session]
    assert record.title == f"hello (via ds, tenant {tenant_id(ALICE)})"
    assert ALICE not in record.title
