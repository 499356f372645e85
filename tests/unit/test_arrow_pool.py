"""Arrow allocates through the system allocator once memlake is imported (decision 4703),
unless the operator chose a pool: mimalloc kept what many threads freed (the soak's memory)."""

from __future__ import annotations

import os
import subprocess
import sys

PROBE = (
    "import os, pyarrow;"
    "import memlake.lake, pyarrow as pa, pyarrow.parquet as pq, io;"
    "b = io.BytesIO(); pq.write_table(pa.table({'a': list(range(100))}), b);"
    "t = pq.read_table(pa.BufferReader(b.getvalue()));"
    "print('POOL', pa.default_memory_pool().backend_name,"
    " pa.system_memory_pool().bytes_allocated() > 0)"
)


def _probe(**env: str) -> str:
    clean = {k: v for k, v in os.environ.items() if k != "ARROW_DEFAULT_MEMORY_POOL"}
    probe = PROBE if env.pop("FIRST", "") else PROBE.replace("import os, pyarrow;", "")
    out = subprocess.run(
        [sys.executable, "-c", probe], env={**clean, **env}, capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr
    lines = [line for line in out.stdout.splitlines() if line.startswith("POOL ")]
    assert lines, (out.stdout, out.stderr)
    return lines[-1].removeprefix("POOL ")


def test_memlake_makes_arrow_use_the_system_allocator() -> None:
    assert _probe() == "system True"


def test_a_host_that_imported_pyarrow_first_gets_it_too() -> None:
    assert _probe(FIRST="1") == "system True"


def test_an_operators_choice_of_pool_stands() -> None:
    assert _probe(ARROW_DEFAULT_MEMORY_POOL="mimalloc").startswith("mimalloc")
