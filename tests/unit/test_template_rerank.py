"""template.yaml grants Bedrock Rerank only when the Reranker parameter asks for it, only to the
functions that search, scoped to the chosen model (docs/decisions/1210)."""

from __future__ import annotations

from memlake.tools.registry import TOOL_NAMES
from tests.unit.test_template import FUNCTIONS, GEN, RESOURCES, TEMPLATE, _policy_refs


def test_rerank_policy_is_conditional_and_scoped_to_the_model() -> None:
    policy = RESOURCES["BedrockRerankPolicy"]
    assert policy["Condition"] == "UseBedrockRerank"
    assert TEMPLATE["Conditions"]["UseBedrockRerank"] == {
        "Fn::Equals": [{"Ref": "Reranker"}, "bedrock"]
    }
    statements = policy["Properties"]["PolicyDocument"]["Statement"]
    model = "arn:${AWS::Partition}:bedrock:${AWS::Region}::foundation-model/${RerankModel}"
    assert {st["Action"]: st["Resource"] for st in statements} == {
        "bedrock:Rerank": "*",  # the action has no resource type
        "bedrock:InvokeModel": {"Fn::Sub": model},
    }
    params = TEMPLATE["Parameters"]
    assert params["Reranker"]["Default"] == "none"
    assert set(params["RerankModel"]["AllowedValues"]) == {
        "cohere.rerank-v3-5:0",
        "amazon.rerank-v1:0",
    }
    env = TEMPLATE["Globals"]["Function"]["Environment"]["Variables"]
    assert env["MEMLAKE_RERANKER"] == {"Ref": "Reranker"}
    assert env["MEMLAKE_RERANK_MODEL"] == {"Ref": "RerankModel"}


def test_only_the_functions_that_search_may_rerank() -> None:
    assert "BedrockRerankPolicy" in _policy_refs(FUNCTIONS["McpFunction"])
    assert "BedrockRerankPolicy" not in _policy_refs(FUNCTIONS["MaintenanceFunction"])
    for name in TOOL_NAMES:
        refs = _policy_refs(FUNCTIONS[GEN.logical_id(name)])
        assert ("BedrockRerankPolicy" in refs) == (name in GEN.SEARCHING_TOOLS), name
    assert set(TOOL_NAMES) >= GEN.SEARCHING_TOOLS
