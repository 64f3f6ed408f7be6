"""A view's SQL text read over other relations: the publication's reader of a view model."""

from __future__ import annotations

import re
from typing import Dict

__all__ = ["swap_relations"]


def swap_relations(text: str, mapping: Dict[str, str]) -> str:
    """``text`` (a view's SQL, as dbt rendered it from ``ref``) with each reference to a
    relation ``schema.name`` of ``mapping``'s keys (backticks allowed around each part, any
    case) replaced by its value. A longer name that starts with a mapped one
    (``schema.name__audit_log``) is another relation and stays."""
    for source, target in sorted(mapping.items(), key=lambda item: -len(item[0])):
        schema, name = source.split(".", 1)
        pattern = (rf"(?<![\w`.])`?{re.escape(schema)}`?\s*\.\s*`?{re.escape(name)}`?(?![\w`])")
        text = re.sub(pattern, lambda _m, t=target: t, text, flags=re.IGNORECASE)
    return text
