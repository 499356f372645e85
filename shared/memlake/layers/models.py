"""Output models shared by the memory-layer tools."""

from __future__ import annotations

from pydantic import Field

from memlake.episodes import EpisodeFields
from memlake.models import Output

MAX_LISTED_IDS = 1_000


class ThreadView(Output):
    id: str
    title: str | None
    context: str | None
    processing_status: str = Field(description="pending | processing | completed")
    claimed_by: str | None = Field(description="Token id of the agent that claimed it")
    claimed_at: str | None
    episode_id: str | None = Field(description="The episode derived from this thread (1:1)")
    message_count: int
    created_at: str | None
    updated_at: str | None
    status_changed_at: str | None


class MessageOut(Output):
    seq: int = Field(description="0-based position in the thread")
    role: str
    content: str
    at: str | None


class ConceptView(Output):
    id: str
    name: str
    kind: str
    description: str | None
    parent_id: str | None
    created_at: str | None
    updated_at: str | None


class LinkFields(Output):
    position: int | None = Field(description="Order of extraction within the episode")
    confidence: float | None = Field(description="0..1")
    linked_at: str | None


class LinkedConcept(ConceptView, LinkFields):
    pass


class LinkedEpisode(LinkFields):
    episode_id: str
    title: str | None
    started_at: str | None
    created_at: str | None


class EpisodeBase(EpisodeFields):
    """An episode as public_view() shows it (content holds upsert_episode's events)."""


class LayerEpisode(EpisodeBase):
    """An episode as the memory-layer tools return it: public_view plus its concept links."""

    concept_ids: list[str] = Field(description="Concepts linked to this episode now")


class BothSides(Output):
    """A link's two sides after the change, read from the same link rows."""

    concept_ids: list[str] = Field(description="The episode's concepts")
    episode_ids: list[str] = Field(description="The concept's episodes (first 1,000)")
    episode_count: int = Field(description="How many episodes the concept has")
