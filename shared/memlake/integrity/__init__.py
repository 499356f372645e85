"""Finding and repairing damaged objects of a tenant (`memlake check`, `memlake repair`).

`check` reads every object the tenant's current manifest names and every manifest in its
history; `repair` writes a new manifest around what `check` found damaged. Decision 2701 says
what is recovered from where and what GC keeps for it.
"""
