"""Typed boundaries between the pipeline's stages: the documents hwadvisor prints.

The facts are frozen dataclasses validated lazily through pydantic (:mod:`.facts`,
:mod:`.plain`); the other documents are pydantic v2 models (:mod:`.common`);
``hwadvisor schema NAME`` publishes the JSON Schema generated from them.
"""

from __future__ import annotations
