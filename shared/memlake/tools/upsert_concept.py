"""upsert_concept: create or update a concept (name, kind, description, parent)."""

from __future__ import annotations

from pydantic import Field

from memlake import idempotency
from memlake.ids import new_id
from memlake.lake import Transaction
from memlake.layers import concepts
from memlake.layers.fields import MAX_DESCRIPTION_CHARS, ConceptId, ConceptKind, ConceptName
from memlake.models import Input, Output
from memlake.timeutil import now
from memlake.tools.base import Annotations, ToolContext, ToolSpec


class UpsertConceptInput(Input):
    id: ConceptId | None = Field(None, description="Concept to update; omit to create")
    name: ConceptName | None = Field(None, description="Needed to create")
    kind: ConceptKind | None = None
    description: str | None = Field(None, max_length=MAX_DESCRIPTION_CHARS)
    parent_id: ConceptId | None = Field(None, description="Parent; null: top-level")
    idempotency_key: idempotency.IdempotencyKey | None = idempotency.key_field()


class ConceptWritten(Output):
    """The concept's ids, name and times; its description is get_concept's (decision 1112)."""

    id: str
    name: str
    kind: str
    parent_id: str | None = None
    created_at: str | None = None
    updated_at: str | None = None


class UpsertConceptOutput(Output):
    concept: ConceptWritten
    created: bool


def run(ctx: ToolContext, args: UpsertConceptInput) -> UpsertConceptOutput:
    concept_id = args.id or new_id()
    given = {k: getattr(args, k) for k in args.model_fields_set - {"id", idempotency.FIELD}}
    at = now()

    def change(txn: Transaction) -> UpsertConceptOutput:
        row, created = concepts.upsert(txn, concept_id, given, at)
        view = concepts.view(row)
        written = ConceptWritten.model_validate(
            {k: view.get(k) for k in ConceptWritten.model_fields}
        )
        return UpsertConceptOutput(concept=written, created=created)

    scope = idempotency.Scope.of(SPEC.name, args, ctx.settings.idempotency_ttl_seconds)
    return idempotency.commit_once(ctx.lake, ctx.tenant, scope, UpsertConceptOutput, change)


SPEC = ToolSpec(
    name="upsert_concept",
    title="Upsert concept",
    description=(
        "Create or update a concept: reusable knowledge from episodes. With id: given"
        " fields replace, omitted ones stay, null clears. idempotency_key makes retries safe."
    ),
    input_model=UpsertConceptInput,
    output_model=UpsertConceptOutput,
    annotations=Annotations(read_only=False, destructive=False, idempotent=False),
    run=run,
    null_clears=True,
)
