"""Memory documents: ``{"facts": [...], "events": [...], "conflicts": [...]}`` as JSON, or
JSON Lines with one record per line and a ``"type"`` of ``fact``, ``event`` or ``conflict``.

The whole document is validated before anything is written; the first bad record is reported
with its place (section and index, or line) and the field at fault.
"""

import json
from pathlib import Path
from typing import Any, Literal
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from haki.errors import ValidationFailed
from haki.models import SCOPE_MAX_CHARS, FactRecord, Label, Timestamp


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class EventRecord(_Record):
    """An episode (source event)."""

    id: UUID | None = None
    project_id: Label = Field(min_length=1, max_length=SCOPE_MAX_CHARS)
    subject_id: Label = Field(min_length=1, max_length=SCOPE_MAX_CHARS)
    #: The conversation thread of the subject (optional).
    thread_id: Label | None = Field(default=None, min_length=1, max_length=SCOPE_MAX_CHARS)
    kind: Label = Field(min_length=1, max_length=128)
    payload: dict[str, Any] = Field(default_factory=dict)
    occurred_at: Timestamp | None = None


class ConflictRecord(_Record):
    """A conflict set over facts of one scope. ``resolved`` needs the fact to keep."""

    id: UUID | None = None
    project_id: Label = Field(min_length=1, max_length=SCOPE_MAX_CHARS)
    subject_id: Label = Field(min_length=1, max_length=SCOPE_MAX_CHARS)
    fact_ids: list[UUID] = Field(min_length=2)
    status: Literal["open", "resolved"] = "open"
    reason: str | None = None
    keep_fact_id: UUID | None = None


class MemoryDocument(_Record):
    facts: list[FactRecord] = Field(default_factory=list)
    events: list[EventRecord] = Field(default_factory=list)
    conflicts: list[ConflictRecord] = Field(default_factory=list)


_SECTIONS: dict[str, tuple[str, type[BaseModel]]] = {
    "fact": ("facts", FactRecord),
    "event": ("events", EventRecord),
    "conflict": ("conflicts", ConflictRecord),
}


def parse_document(path: Path) -> MemoryDocument:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ValidationFailed(f"cannot read {path}: {exc}") from exc
    return parse_document_text(text, jsonl=path.suffix == ".jsonl")


def parse_document_text(text: str, *, jsonl: bool = False) -> MemoryDocument:
    """Parse and validate a whole document (JSON, or JSON Lines when ``jsonl``)."""
    records: dict[str, list[BaseModel]] = {"facts": [], "events": [], "conflicts": []}
    if jsonl:
        for number, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            raw = _load_json(line, f"line {number}")
            if not isinstance(raw, dict) or raw.get("type") not in _SECTIONS:
                raise ValidationFailed(
                    f"line {number}: field 'type' must be one of {sorted(_SECTIONS)}")
            section, model = _SECTIONS[raw.pop("type")]
            records[section].append(_validate(model, raw, f"line {number}"))
    else:
        raw = _load_json(text, "document")
        if not isinstance(raw, dict):
            raise ValidationFailed("document: expected a JSON object with facts/events/conflicts")
        unknown = sorted(set(raw) - {"facts", "events", "conflicts", "queries"})
        if unknown:
            raise ValidationFailed(f"document: unknown section(s) {unknown}")
        for section, model in _SECTIONS.values():
            items = raw.get(section, [])
            if not isinstance(items, list):
                raise ValidationFailed(f"{section}: expected a list")
            for index, item in enumerate(items):
                records[section].append(_validate(model, item, f"{section}[{index}]"))
    return MemoryDocument.model_validate(records)


def _load_json(text: str, where: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValidationFailed(f"{where}: invalid JSON ({exc.msg} at column {exc.colno})") from exc


def _validate(model: type[BaseModel], raw: Any, where: str) -> BaseModel:
    try:
        return model.model_validate(raw)
    except ValidationError as exc:
        raise ValidationFailed.from_errors(exc.errors(), where) from exc
