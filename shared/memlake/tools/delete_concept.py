"""delete_concept: remove a concept and its episode links in one commit."""

from __future__ import annotations

from pydantic import Field

from memlake.lake import Transaction
from memlake.layers import concepts
from memlake.layers.fields import ConceptId
from memlake.models import Input, Output
from memlake.tools.base import Annotations, ToolContext, ToolSpec


class DeleteConceptInput(Input):
    id: ConceptId


class DeleteConceptOutput(Output):
    id: str
    deleted: int = Field(description="1 if the concept existed and is now gone, else 0")
    unlinked_episodes: int = Field(description="Episode links removed with it")


def run(ctx: ToolContext, args: DeleteConceptInput) -> DeleteConceptOutput:
    def change(txn: Transaction) -> DeleteConceptOutput:
        deleted, unlinked = concepts.delete(txn, args.id)
        return DeleteConceptOutput(id=args.id, deleted=deleted, unlinked_episodes=unlinked)

    return ctx.lake.commit(ctx.tenant, change)


SPEC = ToolSpec(
    name="delete_concept",
    title="Delete concept",
    description=("Delete a concept and its episode links; refused while it has child concepts."),
    input_model=DeleteConceptInput,
    output_model=DeleteConceptOutput,
    annotations=Annotations(read_only=False, destructive=True, idempotent=True),
    run=run,
)
