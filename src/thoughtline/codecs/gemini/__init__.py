"""Gemini native ``generateContent`` / ``streamGenerateContent``: the codec package.

Owns every Gemini wire name (``contents``, ``parts``, ``thought``, ``thoughtSignature``,
``functionCall``, ``functionResponse``, ``thinkingConfig``, ``usageMetadata`` …). Pure: no I/O.

- ``wire``: names, the native namespace, the documented dummy signature;
- ``parts``: the one part builder decode and fold share (so stream and whole agree);
- ``decode``: a whole response → canonical Message;
- ``fold``: stream chunks (SSE or JSON-array framing) → deltas and the same Message;
- ``encode``: one turn's ``contents`` entry under a replay plan (signatures back on their own
  parts), and the body around the turns;
- ``turns``: the request turn by turn (``TurnEncoder``): a turn's context is what else its bytes
  depend on (call names and text mode for a result, every call signed for a model turn);
- ``scope``: which Gemini models can read a signature (shared with the Chat
  ``gemini-openai`` route);
- ``profile``: the typed route profile made from ``routes/gemini.toml``;
- ``rejections``: the 400 wordings and what each teaches;
- ``codec``: the ``Codec`` object (``CODEC``) the core talks to.

This ``__init__`` imports nothing so that ``scope`` stays cheap to import from the Chat profile.
"""
