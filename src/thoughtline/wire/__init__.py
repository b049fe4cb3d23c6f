"""The one wire cache (issue 44): each turn of a request encoded once, stored under what it
depends on, spliced into later requests, and a resumed session's walk continued from the one its
last write stored.

- ``cache``: ``WireCache``, a session's memo and write-through of its turns' wire forms;
- ``lastwalk``: the stored form of a walk (each view's contexts, after facts, end state);
- ``facts``: what the core reads about a turn without decoding it (``TurnFacts``, ``Named``);
- ``stored``: a resumed history read from its stored forms, decoded only when needed.

Nothing is imported here: ``codecs.base`` imports ``facts`` and ``cache`` imports the codecs.
"""
