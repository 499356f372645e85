"""An embedding endpoint's key from AWS's stores (issue 47, memlake.embed.api_keys): a Secrets
Manager secret or an SSM SecureString read when a request needs it (moto), sent as the bearer
token to a local endpoint (tests/support/fake_models.py), a rotated key taken after the cache's
age, and a key that cannot be read a clear error."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from aws_lambda_powertools.utilities import parameters
from moto import mock_aws

from memlake.config import Settings
from memlake.embed import api_keys
from memlake.embed.api_keys import key_source
from memlake.embed.base import EmbeddingError
from memlake.embed.openai_compat import OpenAIEmbedder
from memlake.errors import ConfigurationError
from memlake.search.searcher import Searcher
from tests.support.fake_models import fake_models


@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, Any]]:
    for name, value in (
        ("AWS_DEFAULT_REGION", "us-east-1"),
        ("AWS_ACCESS_KEY_ID", "testing"),
        ("AWS_SECRET_ACCESS_KEY", "testing"),
    ):
        monkeypatch.setenv(name, value)
    parameters.clear_caches()
    with mock_aws():
        yield {
            "secrets": boto3.client("secretsmanager", region_name="us-east-1"),
            "ssm": boto3.client("ssm", region_name="us-east-1"),
        }
    parameters.clear_caches()


def _bearer(fake: Any, n: int = -1) -> str:
    return str(fake.requests[n][1]["authorization"])


def test_a_key_in_secrets_manager_is_sent_and_a_rotated_one_taken(
    aws: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    aws["secrets"].create_secret(Name="memlake/embed-key", SecretString="sk-from-secret\n")
    with fake_models(dim=8) as fake:
        emb = OpenAIEmbedder("bag", 8, fake.url + "/v1", key_source("", secret="memlake/embed-key"))
        emb.embed(["one text"])
        assert _bearer(fake) == "Bearer sk-from-secret"
        aws["secrets"].put_secret_value(SecretId="memlake/embed-key", SecretString="sk-rotated")
        emb.embed(["two"])
        assert _bearer(fake) == "Bearer sk-from-secret"  # cached KEY_MAX_AGE seconds
        # once the cached key's age is past (0 s here), the rotated one is read and sent
        parameters.clear_caches()
        monkeypatch.setattr(api_keys, "KEY_MAX_AGE", 0)
        emb.embed(["three"])
        aws["secrets"].put_secret_value(SecretId="memlake/embed-key", SecretString="sk-again")
        emb.embed(["four"])
        assert [_bearer(fake, n) for n in (-2, -1)] == ["Bearer sk-rotated", "Bearer sk-again"]


def test_a_key_in_an_ssm_securestring_is_decrypted_and_sent(aws: dict[str, Any]) -> None:
    aws["ssm"].put_parameter(Name="/memlake/embed-key", Value="sk-from-ssm", Type="SecureString")
    with fake_models(dim=8) as fake:
        key = key_source("", parameter="/memlake/embed-key")
        OpenAIEmbedder("bag", 8, fake.url + "/v1", key).embed(["one text"])
        assert _bearer(fake) == "Bearer sk-from-ssm"


def test_a_key_that_cannot_be_read_is_a_clear_error_that_retrying_cannot_help(
    aws: dict[str, Any],
) -> None:
    with fake_models(dim=8) as fake:
        for source, where in (
            (key_source("", secret="memlake/missing"), "Secrets Manager secret"),
            (key_source("", parameter="/memlake/missing"), "SSM parameter"),
        ):
            with pytest.raises(EmbeddingError) as err:
                OpenAIEmbedder("bag", 8, fake.url + "/v1", source).embed(["one text"])
            assert where in err.value.message and "missing" in err.value.message
            assert not err.value.retryable
        assert fake.requests == []  # nothing was sent without its key
    aws["secrets"].create_secret(Name="memlake/empty", SecretString=" ")
    with pytest.raises(EmbeddingError, match="is empty"):
        key_source("", secret="memlake/empty")()  # type: ignore[operator]


def test_settings_read_the_key_from_the_store_they_name(
    aws: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    aws["secrets"].create_secret(Name="memlake/embed-key", SecretString="sk-from-secret")
    with fake_models(dim=8) as fake:
        monkeypatch.setenv("MEMLAKE_EMBEDDER", "openai")
        monkeypatch.setenv("MEMLAKE_EMBED_MODEL", "bag")
        monkeypatch.setenv("MEMLAKE_EMBED_DIM", "8")
        monkeypatch.setenv("OPENAI_BASE_URL", fake.url + "/v1")
        monkeypatch.setenv("MEMLAKE_EMBED_API_KEY_SECRET", "memlake/embed-key")
        settings = Settings.from_env()
        Searcher(settings).embed_query("where is the heron")
        assert _bearer(fake) == "Bearer sk-from-secret"
        monkeypatch.setenv("OPENAI_API_KEY", "sk-plain")  # two sources: which one is meant?
        with pytest.raises(ConfigurationError, match="not several"):
            Settings.from_env()
