"""Typed boundaries between the pipeline's stages (pydantic v2 models).

Each document hwadvisor prints is one of these models; ``hwadvisor schema NAME``
publishes the JSON Schema generated from them.
"""

from __future__ import annotations
