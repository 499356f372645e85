"""Powertools pieces for the Lambda doors that cost cold-start time only when they are used.

A Powertools Tracer imports the X-Ray SDK (about 0.2 s) even when tracing is off, so the
handlers build one only when the function really traces: Lambda sets AWS_XRAY_DAEMON_ADDRESS
when active tracing is on, and POWERTOOLS_TRACE_DISABLED=true turns it off. Elsewhere
(`sam local invoke`, tests, the cold-start benchmark) a no-op stand-in takes its place.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, Protocol, cast

from memlake.config import in_lambda, tracing_enabled

F = Callable[..., Any]


class TracerLike(Protocol):
    def capture_lambda_handler(self, lambda_handler: F) -> F: ...


class NoTracer:
    """Tracer stand-in when X-Ray is off: the decorator returns the handler unchanged."""

    def capture_lambda_handler(self, lambda_handler: F) -> F:
        return lambda_handler


def make_tracer(service: str) -> TracerLike:
    if not tracing_enabled():
        return NoTracer()
    from aws_lambda_powertools import Tracer

    # patch only botocore (the S3 calls); patching every supported library costs imports
    return cast(TracerLike, Tracer(service=service, patch_modules=("botocore",)))


# counters ----------------------------------------------------------------------------------
_counts: dict[str, int] = {}
_counts_lock = threading.Lock()


def count(name: str, value: int = 1) -> None:
    """Count an event (e.g. "BadRowsSkipped"): in this process (counts(), for the local server
    and tests) and, inside a Lambda function, as a Powertools metric in the "memlake" namespace,
    which the handler's @metrics.log_metrics flushes with the invocation's other metrics."""
    with _counts_lock:
        _counts[name] = _counts.get(name, 0) + value
    if in_lambda():
        from aws_lambda_powertools import Metrics
        from aws_lambda_powertools.metrics import MetricUnit

        Metrics(namespace="memlake").add_metric(name=name, unit=MetricUnit.Count, value=value)


def counts() -> dict[str, int]:
    with _counts_lock:
        return dict(_counts)
