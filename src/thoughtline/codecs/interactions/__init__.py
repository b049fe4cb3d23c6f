"""The Gemini Interactions API (``POST …/interactions``): the sixth API, one codec package.

Shapes come from the official ``google-genai`` Python SDK 3.6.1 (its generated
``google/genai/_gaos/types/interactions/*.py``: ``CreateModelInteractionParam``, ``Interaction``,
``ThoughtStep``, ``StepStart``/``StepDelta``/``StepStop``, ``ThoughtSignatureDelta``) and from
provider-updates.md §4d and §1b; no recorded Interactions traffic existed when it was written.
"""
