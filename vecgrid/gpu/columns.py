"""Result columns: the values of one field for a list of rows, as the engine, the reducers and the
proxy pass them around (protobuf ``FieldData`` conversions live in :mod:`.results`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from vecgrid import errors


@dataclass
class FieldColumn:
    """Values of one field for a list of rows."""

    name: str
    field_id: int
    data_type: int
    values: np.ndarray
    dim: int = 0
    is_dynamic: bool = False

    def take(self, idx: np.ndarray) -> "FieldColumn":
        return FieldColumn(self.name, self.field_id, self.data_type, self.values[idx], self.dim,
                           self.is_dynamic)

    def __len__(self) -> int:
        return len(self.values)


def concat_columns(groups: Sequence[Sequence[FieldColumn]]) -> list[FieldColumn]:
    """Concatenate per-part columns (matched by name) into one list."""
    groups = [g for g in groups]
    if not groups:
        return []
    first = groups[0]
    out = []
    for j, col in enumerate(first):
        parts = []
        for g in groups:
            match = next((c for c in g if c.name == col.name), None)
            if match is None:
                raise errors.ParameterInvalid(f"output field {col.name} missing from a partial result")
            parts.append(match.values)
        vals = np.concatenate(parts) if parts else col.values
        out.append(FieldColumn(col.name, col.field_id, col.data_type, vals, col.dim, col.is_dynamic))
    return out
