"""The gateway's app for granian (``gateway_profile --server granian``): a server comparison only.

``granian --interface asgi --factory benchmarks._granian_serve:app`` with ``TL_GRANIAN_CONFIG``
(a gateway.toml) and ``TL_GRANIAN_HOME`` set; the app is built as ``thoughtline serve`` builds it.
"""

from __future__ import annotations

import os
import tomllib
from pathlib import Path
from typing import Any


def app() -> Any:
    from thoughtline.gateway.app import Gateway, create_app
    from thoughtline.gateway.config import parse
    from thoughtline.requestlog import RequestLog
    from thoughtline.store import open_store

    home = Path(os.environ["TL_GRANIAN_HOME"])
    config = parse(tomllib.loads(Path(os.environ["TL_GRANIAN_CONFIG"]).read_text()))
    store = open_store(config.store or None, home, crash_durable_only=True)
    return create_app(Gateway(config, store, request_log=RequestLog(home / "logs")))
