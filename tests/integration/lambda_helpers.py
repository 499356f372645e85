"""What `sam local invoke` does, for tests: template -> env, handler import, event, context."""

from __future__ import annotations

import base64
import importlib
import json
import sys
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import boto3
import pytest
from cfnlint.decode import cfn_yaml
from moto import mock_aws

ROOT = Path(__file__).resolve().parents[2]
BUCKET = "memlake-lambda-test"


def load_template() -> dict[str, Any]:
    """template.yaml through cfn-lint's loader (understands !Ref, !Sub, !GetAtt, !If)."""
    return cfn_yaml.load(str(ROOT / "template.yaml"))  # type: ignore[no-any-return]


def functions(template: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {
        name: res
        for name, res in template["Resources"].items()
        if res["Type"] == "AWS::Serverless::Function"
    }


def handler_of(resource: dict[str, Any]) -> str:
    props = resource["Properties"]
    if props.get("PackageType") == "Image":
        return str(props["ImageConfig"]["Command"][0])
    return str(props["Handler"])


def code_path(handler: str) -> Path:
    """The file the Lambda runtime imports for a handler like functions.x.app.lambda_handler:
    the image copies functions/ to the task root (infra/Dockerfile), as the repo root has it."""
    module = handler.rsplit(".", 1)[0]
    return ROOT / (module.replace(".", "/") + ".py")


#: sample values of the template's parameters that have no default (sam deploy asks for them)
REQUIRED_PARAMETERS = {
    "JwtIssuer": "https://cognito-idp.us-east-1.amazonaws.com/us-east-1_Example",
}


def resolve_env(template: dict[str, Any], resource: dict[str, Any]) -> dict[str, str]:
    """Globals + function environment, with !Ref of parameters (defaults) and of the bucket."""
    env: dict[str, Any] = {}
    env.update(template["Globals"]["Function"]["Environment"]["Variables"])
    env.update(resource["Properties"].get("Environment", {}).get("Variables", {}))
    params = template.get("Parameters", {})
    out = {}
    for key, value in env.items():
        if isinstance(value, dict) and "Ref" in value:
            ref = value["Ref"]
            value = BUCKET if ref == "LakeBucket" else params[ref].get("Default")
            value = REQUIRED_PARAMETERS[ref] if value is None else value
        out[key] = str(value)
    return out


@dataclass
class FakeContext:
    function_name: str = "memlake-test"
    function_version: str = "$LATEST"
    memory_limit_in_mb: int = 1024
    aws_request_id: str = field(default_factory=lambda: uuid.uuid4().hex)
    invoked_function_arn: str = "arn:aws:lambda:us-east-1:123456789012:function:memlake-test"
    log_group_name: str = "/aws/lambda/memlake-test"
    log_stream_name: str = "2026/01/15/[$LATEST]0123"

    def get_remaining_time_in_millis(self) -> int:
        return 30_000


def reset_process_state() -> None:
    """A fresh 'cold' process as far as memlake caches go (settings, services, endpoint)."""
    from memlake import config, services

    config.settings.cache_clear()
    services.default_services.cache_clear()
    mod = sys.modules.get("functions.mcp.app")
    if mod is not None:
        mod._endpoint = None  # type: ignore[attr-defined]


def import_handler(handler: str) -> Any:
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    module, func = handler.rsplit(".", 1)
    return getattr(importlib.import_module(module), func)


@contextmanager
def lambda_env(monkeypatch: pytest.MonkeyPatch, env: dict[str, str]) -> Iterator[Any]:
    """moto S3 with the stack's bucket, and the function's environment."""
    with mock_aws():
        client = boto3.client("s3", region_name="us-east-1")
        client.create_bucket(Bucket=BUCKET)
        for key, value in env.items():
            monkeypatch.setenv(key, value)
        reset_process_state()
        try:
            yield client
        finally:
            reset_process_state()


TEMPLATE = load_template()
FUNCTIONS = functions(TEMPLATE)
MCP = "McpFunction"
Handler = Callable[[Any, Any], Any]


class Stack:
    """template.yaml's functions as `sam local invoke` runs them, on moto S3 (the stack's
    bucket): one function's environment at a time, process caches emptied on each switch."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, s3: Any, env: dict[str, str]) -> None:
        self.monkeypatch = monkeypatch
        self.s3 = s3  # moto's S3 client
        self.env = env

    def use(self, logical_id: str = MCP, **overrides: str) -> Stack:
        """The environment of `logical_id` (plus overrides) from now on: a fresh cold start."""
        env = {**resolve_env(TEMPLATE, FUNCTIONS[logical_id]), **overrides}
        for key in self.env.keys() - env.keys():
            self.monkeypatch.delenv(key, raising=False)
        for key, value in env.items():
            self.monkeypatch.setenv(key, value)
        self.env = env
        reset_process_state()
        return self

    def handler(self, logical_id: str = MCP) -> Handler:
        return import_handler(handler_of(FUNCTIONS[logical_id]))  # type: ignore[no-any-return]

    def invoke(self, logical_id: str, event: Any, context: Any = None) -> Any:
        return self.handler(logical_id)(event, context if context is not None else FakeContext())

    def mcp(self, body: Any, claims: dict[str, Any] | None = None, **kw: Any) -> dict[str, Any]:
        """The MCP function's answer to `body` as API Gateway hands it over (JWT claims)."""
        return self.invoke(MCP, apigw_event(body, claims=claims, **kw))  # type: ignore[no-any-return]

    def object_keys(self) -> list[str]:
        return [o["Key"] for o in self.s3.list_objects_v2(Bucket=BUCKET).get("Contents", [])]


@contextmanager
def deployed(
    monkeypatch: pytest.MonkeyPatch, logical_id: str = MCP, **overrides: str
) -> Iterator[Stack]:
    """The stack on moto S3 with `logical_id`'s environment (the `stack` fixture's body)."""
    env = {**resolve_env(TEMPLATE, FUNCTIONS[logical_id]), **overrides}
    with lambda_env(monkeypatch, env) as s3:
        yield Stack(monkeypatch, s3, env)


def load_event(folder: str) -> dict[str, Any]:
    return json.loads((ROOT / "functions" / folder / "event.json").read_text())  # type: ignore[no-any-return]


def apigw_event(
    body: dict[str, Any] | bytes | None,
    *,
    claims: dict[str, Any] | None = None,
    method: str = "POST",
    path: str = "/mcp",
    headers: dict[str, str] | None = None,
    base64_body: bool = False,
    stage: str = "$default",
) -> dict[str, Any]:
    """An API Gateway HTTP API payload 2.0 event, like the JWT authorizer hands to Lambda."""
    raw = body if isinstance(body, bytes) else (json.dumps(body).encode() if body else b"")
    hdrs = {"content-type": "application/json", "accept": "application/json"}
    hdrs.update(headers or {})
    ctx: dict[str, Any] = {
        "http": {"method": method, "path": path},
        "requestId": uuid.uuid4().hex[:14] + "=",
        "stage": stage,
    }
    if claims is not None:
        ctx["authorizer"] = {"jwt": {"claims": claims, "scopes": None}}
    return {
        "version": "2.0",
        "rawPath": path,
        "headers": hdrs,
        "requestContext": ctx,
        "body": base64.b64encode(raw).decode() if base64_body else raw.decode(),
        "isBase64Encoded": base64_body,
    }


def rpc(method: str, params: dict[str, Any] | None = None, msg_id: int = 1) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params or {}}


def call(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return rpc("tools/call", {"name": name, "arguments": arguments})
