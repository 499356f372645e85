"""Output models shared by the memory-layer tools."""

from __future__ import annotations

from pydantic import Field

from memlake.episodes import EpisodeFields
from memlake.models import Output

MAX_LISTED_IDS = 1_000


class ThreadView(Output):
    id: str
    title: str | None = None
    context: str | None = None
    processing_status: str = Field(description="pending | processing | completed")
    claimed_by: str | None = Field(None, description="Token id of the agent that claimed it")
    claimed_at: str | None = None
    episode_id: str | None = Field(None, description="The episode derived from this thread (1:1)")
    message_count: int
    created_at: str | None = None
    updated_at: str | None = None
    status_changed_at: str | None = None


class MessageOut(Output):
    seq: int = Field(description="0-based position in the thread")
    role: str
    content: str
    at: str | None = None


class ConceptView(Output):
    id: str
    name: str
    kind: str
    description: str | None = None
    parent_id: str | None = None
    created_at: str | None = None
    updated_at: str | None = None


class LinkFields(Output):
    position: int | None = Field(None, description="Order of extraction within the episode")
    confidence: float | None = Field(None, description="0..1")
    linked_at: str | None = None


class LinkedConcept(ConceptView, LinkFields):
    pass


class LinkedEpisode(LinkFields):
    episode_id: str
    title: str | None = None
    started_at: str | None = None
    created_at: str | None = None


class EpisodeBase(EpisodeFields):
    """An episode as public_view() shows it (content holds upsert_episode's events)."""


class LayerEpisode(EpisodeBase):
    """An episode as the memory-layer tools return it: public_view plus its concept links."""

    concept_ids: list[str] = Field(
        default_factory=list, description="Concepts linked to this episode now"
    )


class BothSides(Output):
    """A link's two sides after the change, read from the same link rows."""

    concept_ids: list[str] = Field(default_factory=list, description="The episode's concepts")
    episode_ids: list[str] = Field(
        default_factory=list, description="The concept's episodes (first 1,000)"
    )
    episode_count: int = Field(description="How many episodes the concept has")
