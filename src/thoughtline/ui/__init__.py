"""``thoughtline ui``: a read-only inspector of sessions, branches, carriers and requests.

Owns the pages (``app``), what they show (``pages`` for sessions and turns, ``requests`` for the
request log and its chart) and serving them (``server``). It reads the store through its public
API and the request log through ``requestlog``; it never writes either. Everything a page shows
from a stored payload is untrusted text: templates autoescape it and ``termsafe`` makes control
characters visible.
"""
