"""Shared pydantic base for the FlashInfer-Bench records."""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, ConfigDict

__all__ = ["Record"]


class Record(BaseModel):
    """Base of every stored record.

    Records are frozen, and keep fields they do not know (``extra="allow"``) so a file
    written by a newer FlashInfer-Bench survives a read and write here unchanged.
    NaN and infinities serialize as the strings ``"NaN"``, ``"Infinity"``, ``"-Infinity"``.
    """

    model_config = ConfigDict(
        extra="allow",
        frozen=True,
        ser_json_inf_nan="strings",
        validate_default=False,
    )

    def to_json_obj(self) -> dict[str, Any]:
        """The record as a JSON-ready dict, holding exactly the fields that were set.

        Fields left at their defaults when the record was read are not written back, so
        reading a file and writing it again gives the same JSON object.
        """
        obj: dict[str, Any] = json.loads(self.to_json())
        return obj

    def to_json(self) -> str:
        """The record as one compact JSON line (see :meth:`to_json_obj`)."""
        return self.to_json_bytes().decode()

    def to_json_bytes(self) -> bytes:
        """:meth:`to_json` as the UTF-8 bytes the serializer makes (no decode and re-encode:
        the store hashes and keeps these bytes)."""
        return self.__pydantic_serializer__.to_json(self, exclude_unset=True)
