"""The OpenAI-compatible gateway (``thoughtline serve``): durable reasoning replay for any client.

- ``config``: gateway.toml and the flags; ``tenancy``: bearer tokens → tenants;
- ``app``: the Starlette routes; ``conversation``: a request as a turn, the gateway's TurnSink;
- ``rehydrate``: matching resent assistant messages to stored turns; ``storage``: the store,
  off the event loop; ``stream``: cancel-on-disconnect responses; ``upstreams``: an engine,
  pool and timeouts per upstream, and how an upstream's failure is answered; ``accesslog``;
  ``server``.

No wire logic lives here: the client's Chat wire is ``codecs.openai_chat.client``, each upstream's
is its codec behind the ``TurnEngine``.
"""
