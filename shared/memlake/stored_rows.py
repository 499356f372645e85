"""What a stored row of each table may hold: the tools' own field types, applied to whole rows.

`memlake import` checks every row with these models before it writes anything, so a file can
only bring in rows the tools could have written: required fields present, ids in the stored
(canonical) form, the same length and count limits, enums and time spans as the tool inputs.
Each table's spec names its model (TableSpec.row_model, attached where the features are listed:
memlake.features; a unit test checks every table has one); a table without one is refused on
import rather than let through unchecked.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from memlake.audit import ACTIONS
from memlake.errors import InvalidArgument
from memlake.ids import ID_PATTERN
from memlake.lake.schema import TableSpec
from memlake.layers.fields import (
    MAX_DESCRIPTION_CHARS,
    MAX_MODALITIES,
    MAX_TAGS,
    MAX_THREAD_MESSAGES,
    ClientName,
    ConceptKind,
    ConceptName,
    MessageIn,
    Modality,
    ModelName,
    Platform,
    Role,
    Tag,
    Timezone,
    Title,
)
from memlake.layers.tables import link_id, message_id
from memlake.models import (
    MAX_ENTITY_IDS,
    MAX_SUMMARY_CHARS,
    Context,
    EntityId,
    check_metadata,
)
from memlake.relationships.models import RelationshipType, Strength

DEFAULT_MAX_CONTENT_BYTES = 256 * 1024


def _stored_id(value: str) -> str:
    if not ID_PATTERN.match(value):
        raise ValueError(f"{value[:80]!r} is not a valid id (1-64 letters, digits, '_' or '-')")
    return value


#: An id as the lake stores it: exactly ids.ID_PATTERN, no 'episode:' prefix, no blanks.
StoredId = Annotated[str, AfterValidator(_stored_id)]


def _json_object(value: str) -> str:
    try:
        parsed = json.loads(value)
    except ValueError:
        raise ValueError("must be JSON object text") from None
    if not isinstance(parsed, dict):
        raise ValueError("must be JSON object text")
    check_metadata(parsed)
    return value


#: Free-form metadata as stored: JSON object text within the tools' metadata limits.
JsonObjectText = Annotated[str, AfterValidator(_json_object)]


class StoredRow(BaseModel):
    model_config = ConfigDict(extra="forbid", protected_namespaces=())

    id: StoredId


def _text(value: str, what: str) -> str:
    if not value.strip():
        raise ValueError(f"{what} is empty")
    return value


class EpisodeRow(StoredRow):
    content: str = Field(min_length=1)
    summary: str | None = Field(None, max_length=MAX_SUMMARY_CHARS)
    title: Title | None = None
    context: Context | None = None
    metadata: JsonObjectText | None = None
    entity_ids: list[EntityId] | None = Field(None, max_length=MAX_ENTITY_IDS)
    tags: list[Tag] | None = Field(None, max_length=MAX_TAGS)
    created_at: datetime
    updated_at: datetime | None = None
    started_at: datetime | None = None
    ended_at: datetime | None = None
    timezone: Timezone | None = None
    platform: Platform | None = None
    client: ClientName | None = None
    model: ModelName | None = None
    voice_mode: bool | None = None
    input_modalities: list[Modality] | None = Field(None, max_length=MAX_MODALITIES)
    output_modalities: list[Modality] | None = Field(None, max_length=MAX_MODALITIES)
    qualities: JsonObjectText | None = None
    source_thread_id: StoredId | None = None
    revision: int | None = Field(None, ge=1)
    previous_version: int | None = Field(None, ge=0)

    @field_validator("content")
    @classmethod
    def _content(cls, value: str, info: ValidationInfo) -> str:
        limit = (info.context or {}).get("max_content_bytes", DEFAULT_MAX_CONTENT_BYTES)
        size = len(value.encode())
        if size > limit:
            raise ValueError(f"content is {size:,} bytes; the limit is {limit:,}")
        return _text(value, "content")

    @model_validator(mode="after")
    def _span(self) -> EpisodeRow:
        if self.started_at and self.ended_at and self.started_at > self.ended_at:
            raise ValueError("started_at is after ended_at")
        return self


class ChunksRow(StoredRow):
    """Search vectors of one episode (memlake.search.indexing)."""

    model: str = Field(min_length=1, max_length=200)
    content_hash: str = Field(pattern=r"^[0-9a-f]{64}$")
    starts: list[int] = Field(min_length=1)
    ends: list[int] = Field(min_length=1)
    #: vectors of the first passages; fewer than starts while some are pending (decision 1041)
    vectors: list[list[Any]]  # the column type checks the floats and dim

    @model_validator(mode="after")
    def _aligned(self) -> ChunksRow:
        if len(self.starts) != len(self.ends) or len(self.vectors) > len(self.starts):
            raise ValueError("starts and ends need the same length, and no more vectors")
        if any(s < -1 or e < s for s, e in zip(self.starts, self.ends, strict=True)):
            raise ValueError("each chunk needs -1 <= start <= end")
        return self


class BacklogRow(StoredRow):
    """An episode whose vectors the index does not hold in full yet (derived state: export
    leaves the table out and import refuses it, memlake.search.index.backlog)."""

    content_hash: str = Field(pattern=r"^[0-9a-f]{64}$")
    passages: int = Field(ge=1)
    embedded: int = Field(ge=0)
    indexed: int = Field(ge=0)


class ThreadRow(StoredRow):
    title: Title | None = None
    context: Context | None = None
    processing_status: Literal["pending", "processing", "completed"]
    claimed_by: str | None = Field(None, min_length=1, max_length=128)
    claimed_at: datetime | None = None
    episode_id: StoredId | None = None
    message_count: int = Field(ge=0, le=MAX_THREAD_MESSAGES)
    created_at: datetime
    updated_at: datetime | None = None
    status_changed_at: datetime | None = None


class MessageRow(StoredRow):
    thread_id: StoredId
    seq: int = Field(ge=0, lt=MAX_THREAD_MESSAGES)
    role: Role
    content: str
    at: datetime | None = None

    @field_validator("content")
    @classmethod
    def _content(cls, value: str) -> str:
        MessageIn.model_validate({"role": "user", "content": value})  # its size and blank rules
        return value

    @model_validator(mode="after")
    def _derived_id(self) -> MessageRow:
        if self.id != message_id(self.thread_id, self.seq):
            raise ValueError(f"id must be {message_id(self.thread_id, self.seq)!r}")
        return self


class ConceptRow(StoredRow):
    name: ConceptName
    kind: ConceptKind
    description: str | None = Field(None, max_length=MAX_DESCRIPTION_CHARS)
    parent_id: StoredId | None = None
    created_at: datetime
    updated_at: datetime | None = None

    @model_validator(mode="after")
    def _not_own_parent(self) -> ConceptRow:
        if self.parent_id == self.id:
            raise ValueError("a concept cannot be its own parent")
        return self


class LinkRow(StoredRow):
    concept_id: StoredId
    episode_id: StoredId
    position: int | None = Field(None, ge=0, le=100_000)
    confidence: float | None = Field(None, ge=0.0, le=1.0, allow_inf_nan=False)
    created_at: datetime

    @model_validator(mode="after")
    def _derived_id(self) -> LinkRow:
        if self.id != link_id(self.concept_id, self.episode_id):
            raise ValueError("id must be link_id(concept_id, episode_id)")
        return self


class RelationshipRow(StoredRow):
    from_id: StoredId
    to_id: StoredId
    type: RelationshipType
    strength: Strength
    metadata: JsonObjectText | None = None
    created_at: datetime
    created_by: str | None = Field(None, min_length=1, max_length=128)

    @model_validator(mode="after")
    def _two_episodes(self) -> RelationshipRow:
        if self.from_id == self.to_id:
            raise ValueError("from_id and to_id are the same episode")
        return self


class AuditRow(StoredRow):
    created_at: datetime
    tenant: str | None = Field(None, max_length=63)
    token_id: str = Field(min_length=1, max_length=128)
    action: Literal[ACTIONS]  # type: ignore[valid-type]
    relationship_id: StoredId | None = None
    from_id: StoredId | None = None
    to_id: StoredId | None = None
    type: str | None = Field(None, max_length=64)
    details: JsonObjectText | None = None


class ErasureRow(StoredRow):
    """A request or receipt of the `erasures` table (memlake.erasure.requests): derived, so
    never imported; the model says what a row may hold (ids and counts, never content)."""

    kind: Literal["episode", "thread"]
    status: Literal["pending", "erased"]
    requested_at: datetime
    requested_seq: int = Field(ge=1)
    reason: Literal["delete", "retention"] | None = None
    target_created_at: datetime | None = None
    erased_at: datetime | None = None
    erased_version: int | None = Field(None, ge=0)
    objects: str | None = Field(None, max_length=1_000_000)


def _describe(err: Any) -> str:
    loc = ".".join(str(p) for p in err.get("loc", ()))
    msg = str(err.get("msg", "invalid value")).removeprefix("Value error, ")
    if err.get("type") == "extra_forbidden":
        msg = "unknown column"
    return f"{loc}: {msg}" if loc else msg


def check_row(
    spec: TableSpec, row: dict[str, Any], where: str, *, max_content_bytes: int | None = None
) -> None:
    """Raise InvalidArgument naming `where` and the fields when `row` is not a valid stored row
    of the table `spec` describes."""
    table, model = spec.name, spec.row_model
    if model is None:
        raise InvalidArgument(
            f"{where}: table {table} has no row model, so its rows cannot be checked",
            hint="Give its TableSpec a row_model (memlake.features).",
        )
    limit = max_content_bytes or DEFAULT_MAX_CONTENT_BYTES
    try:
        model.model_validate(row, context={"max_content_bytes": limit})
    except ValidationError as e:
        problems = "; ".join(_describe(err) for err in e.errors(include_url=False)[:5])
        raise InvalidArgument(
            f"{where}: not a valid {table} row: {problems}"[:500],
            hint="Import files written by `memlake export`; every row must be one a tool could"
            " have stored (required fields, id format, limits).",
        ) from None
