"""Shaping rehydrated turns for the route includes the learn-once fallback: a strict endpoint that
refuses replayed reasoning fields is taught once (one 400, one retry) and never sent them again —
in later requests, in other conversations, and after the gateway restarts on the same store."""

from __future__ import annotations

import tomllib
from pathlib import Path

import openai
from gateway_support import UPSTREAM_KEY_ENV

from thoughtline.gateway.app import Gateway, create_app
from thoughtline.gateway.config import parse
from thoughtline.store import SQLiteStore
from thoughtline.testing import ChatEmulator
from thoughtline.testing.loopback import LoopbackServer


def _conversation(base_url: str, opening: str) -> None:
    client = openai.OpenAI(base_url=base_url, api_key="x", max_retries=0)
    messages = [{"role": "user", "content": opening}]
    for follow_up in ("Why?", "Thanks."):
        answer = client.chat.completions.create(model="cu/strict-reasoner", messages=messages)
        messages += [{"role": "assistant", "content": answer.choices[0].message.content},
                     {"role": "user", "content": follow_up}]


def test_a_strict_endpoint_is_learned_once_and_the_lesson_survives_a_restart(
        tmp_path: Path) -> None:
    with ChatEmulator("strict-custom") as emu:
        config = parse(tomllib.loads(
            f'[[upstream]]\nname = "cu"\nprovider = "custom"\nbase_url = "{emu.base_url}"\n'
            f'api_key_env = "{UPSTREAM_KEY_ENV}"\n'))
        for opening in ("Hello there", "Good morning"):  # two runs of the gateway, one store
            store = SQLiteStore(tmp_path / "state.db")
            server = LoopbackServer(create_app(Gateway(config, store, environ={}))).start()
            try:
                _conversation(server.origin + "/v1", opening)
            finally:
                server.stop()
                store.close()
        statuses = [r.status for r in emu.received]
        refused = [r for r in emu.received if r.status == 400]
    assert len(refused) == 1
    assert b'"reasoning' in refused[0].raw  # it carried the rehydrated reasoning ...
    retry = emu.received[statuses.index(400) + 1]
    assert retry.status == 200 and b'"reasoning' not in retry.raw  # ... the retry did not
    # Two conversations of two requests each; the second request of the first was refused once.
    assert statuses == [200, 400, 200, 200, 200]
    assert all(b'"reasoning' not in r.raw for r in emu.received[statuses.index(400) + 1:])
