"""JSON as gpushare prints it: indented by two, UTF-8. A placement of 100,000 pods is tens of megabytes of JSON;
msgspec writes it in C, where the standard library's indenting writer runs in Python (seconds)."""

from __future__ import annotations

import json
from typing import Any

import msgspec

_ENCODER = msgspec.json.Encoder()


def dumps(doc: Any) -> str:
    """`doc` as indented JSON text (what `json.dumps(doc, indent=2, ensure_ascii=False)` means)."""
    try:
        return msgspec.json.format(_ENCODER.encode(doc), indent=2).decode()
    except (TypeError, msgspec.EncodeError):  # a value msgspec does not encode: the standard library may
        return json.dumps(doc, indent=2, ensure_ascii=False)
