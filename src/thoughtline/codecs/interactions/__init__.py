"""The Gemini Interactions API (``POST …/interactions``): the sixth API, one codec package.

Shapes come from the official ``google-genai`` Python SDK 3.6.1 (its generated
``google/genai/_gaos/types/interactions/*.py``: ``CreateModelInteractionParam``, ``Interaction``,
``ThoughtStep``, ``StepStart``/``StepDelta``/``StepStop``, ``ThoughtSignatureDelta``) and from
ai.google.dev/gemini-api/docs/interactions (and its thinking page); no recorded Interactions traffic
existed when it was written.
"""
