"""template.yaml's OpenAI-compatible embedder on the Lambda doors (issue 47): the endpoint's key
read from Secrets Manager or an SSM SecureString at run time (moto), never from a template
parameter or the environment; the policy that lets the functions read it, and only it."""

from __future__ import annotations

from collections.abc import Iterator

import boto3
import pytest
from aws_lambda_powertools.utilities import parameters

from memlake.tools.registry import TOOL_NAMES
from tests.support.fake_models import fake_models
from tests.unit.test_template import FUNCTIONS, GEN, RESOURCES, TEMPLATE, _policy_refs

from .lambda_helpers import Stack


@pytest.fixture
def fresh_keys() -> Iterator[None]:
    parameters.clear_caches()
    yield
    parameters.clear_caches()


def _openai(stack: Stack, url: str, **key: str) -> Stack:
    env = {"MEMLAKE_EMBEDDER": "openai", "OPENAI_BASE_URL": url + "/v1"}
    env |= {"MEMLAKE_EMBED_MODEL": "bag", "MEMLAKE_EMBED_DIM": "8"}
    return stack.use("AddEpisodeFunction", **env, **key)


@pytest.mark.parametrize("store", ["secret", "parameter"])
def test_the_functions_embed_with_the_key_from_the_store_the_stack_names(
    stack: Stack, fresh_keys: None, store: str
) -> None:
    if store == "secret":
        sm = boto3.client("secretsmanager", region_name="us-east-1")
        sm.create_secret(Name="memlake/embed-key", SecretString="sk-stack-secret")
        key = {"MEMLAKE_EMBED_API_KEY_SECRET": "memlake/embed-key"}
    else:
        ssm = boto3.client("ssm", region_name="us-east-1")
        ssm.put_parameter(Name="/memlake/embed-key", Value="sk-stack-secret", Type="SecureString")
        key = {"MEMLAKE_EMBED_API_KEY_PARAMETER": "/memlake/embed-key"}
    with fake_models(dim=8) as fake:
        tools = _openai(stack, fake.url, **key)
        added = tools.invoke(
            "AddEpisodeFunction", {"tenant": "demo", "arguments": {"content": "heron at dawn"}}
        )
        assert "vectors_pending" not in added, added  # embedded at once
        found = tools.invoke(
            "SearchEpisodesFunction", {"tenant": "demo", "arguments": {"query": "heron"}}
        )
        assert [h["id"] for h in found["episodes"]] == [added["id"]]
        assert {h["authorization"] for _, h, _ in fake.requests} == {"Bearer sk-stack-secret"}
    assert "sk-stack-secret" not in str(tools.env)  # the environment names the store only


def test_a_missing_secret_fails_the_write_with_a_clear_error(
    stack: Stack, fresh_keys: None
) -> None:
    with fake_models(dim=8) as fake:
        tools = _openai(stack, fake.url, MEMLAKE_EMBED_API_KEY_SECRET="memlake/nowhere")
        result = tools.invoke(
            "AddEpisodeFunction", {"tenant": "demo", "arguments": {"content": "heron at dawn"}}
        )
        assert result["isError"] and "memlake/nowhere" in result["error"]["message"]
        assert fake.requests == []
    assert tools.object_keys() == []


def test_the_key_policy_is_conditional_and_scoped_to_the_named_secret_or_parameter() -> None:
    policy = RESOURCES["EmbedKeyPolicy"]
    assert policy["Condition"] == "HasEmbedKey"
    secret, parameter = policy["Properties"]["PolicyDocument"]["Statement"]
    assert secret["Fn::If"][0] == "HasKeySecret" and parameter["Fn::If"][0] == "HasKeyParameter"
    assert secret["Fn::If"][1]["Action"] == "secretsmanager:GetSecretValue"
    assert secret["Fn::If"][1]["Resource"]["Fn::Sub"].endswith(
        ":secret:${EmbedApiKeySecret}-??????"
    )
    assert parameter["Fn::If"][1]["Action"] == "ssm:GetParameter"
    assert parameter["Fn::If"][1]["Resource"]["Fn::Sub"].endswith(
        ":parameter${EmbedApiKeyParameter}"
    )
    env = TEMPLATE["Globals"]["Function"]["Environment"]["Variables"]
    assert env["MEMLAKE_EMBED_API_KEY_SECRET"] == {"Ref": "EmbedApiKeySecret"}
    assert env["MEMLAKE_EMBED_API_KEY_PARAMETER"] == {"Ref": "EmbedApiKeyParameter"}
    assert "OPENAI_API_KEY" not in env
    # no parameter takes a key itself: only where one is kept
    keyish = {n for n in TEMPLATE["Parameters"] if "key" in n.lower()}
    assert keyish == {"EmbedApiKeySecret", "EmbedApiKeyParameter"}


def test_every_function_that_may_embed_may_read_the_key() -> None:
    for name, function in FUNCTIONS.items():
        refs = _policy_refs(function)
        assert ("EmbedKeyPolicy" in refs) == ("BedrockEmbedPolicy" in refs), name
    for tool in TOOL_NAMES:
        assert "EmbedKeyPolicy" in _policy_refs(FUNCTIONS[GEN.logical_id(tool)]), tool
