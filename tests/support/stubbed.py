"""boto3 clients for botocore's Stubber: fake credentials, no network (the Bedrock tests)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import boto3
from botocore.stub import Stubber


def offline_client(service: str, region: str) -> Any:
    return boto3.client(
        service, region_name=region, aws_access_key_id="testing", aws_secret_access_key="testing"
    )


@contextmanager
def stubbed(client: Any) -> Iterator[Stubber]:
    """A Stubber on `client` that fails the test when a queued response was never used."""
    with Stubber(client) as stub:
        yield stub
        stub.assert_no_pending_responses()
