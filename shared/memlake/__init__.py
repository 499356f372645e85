"""memlake: episodic memory for AI agents over MCP, stored as a Parquet lake on object storage."""

import os

__version__ = "0.1.0"

# Arrow allocates through glibc's malloc, not its bundled mimalloc (decision 4703): under a
# server's many threads mimalloc kept what it freed (a 3-minute soak: 190 -> 300 MB resident,
# 3 MB of it allocated; with malloc 176 -> 195). Set before any memlake module imports
# pyarrow: Arrow reads it once, at its first allocation; memlake.lake sets pyarrow's pool
# too, for a host that imported pyarrow first. An operator's own choice stands.
#: whether the operator chose another pool (then memlake leaves Arrow's choice alone)
ARROW_POOL_CHOSEN = os.environ.setdefault("ARROW_DEFAULT_MEMORY_POOL", "system") != "system"
