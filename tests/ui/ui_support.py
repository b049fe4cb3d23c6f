"""Shared by the inspector tests: the hostile payload, the demo home's shape, a served app."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import uvicorn

from thoughtline.gateway.server import bind
from thoughtline.ui.app import Inspector, create_app

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
#: Markup and terminal control characters, as a provider or an imported file could store them.
HOSTILE = "<script>window.pwned = 1</script><img src=x onerror=\"window.pwned = 2\">" \
          "\x1b]0;owned\x07\x1b[31mred\u202eevil"
GATEWAY_TOKEN = "tok-secret-42"


@dataclass(frozen=True, kw_only=True, slots=True)
class DemoHome:
    home: Path
    ids: dict[str, str]  # demo session title -> id, plus "hostile", "branch", "compacted",
    # "six", "early branch", "tenant"



class Served:
    """The inspector app on a loopback port, in a thread, until ``stop``."""

    def __init__(self, inspector: Inspector) -> None:
        self.sock = bind("127.0.0.1", 0)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        config: Any = uvicorn.Config(create_app(inspector), log_config=None, access_log=False,
                                     lifespan="off")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run,
                                       kwargs={"sockets": [self.sock]}, daemon=True)
        self.thread.start()
        deadline = time.monotonic() + 10
        while not self.server.started:
            assert time.monotonic() < deadline, "the inspector did not start"
            time.sleep(0.02)

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)
        self.sock.close()
