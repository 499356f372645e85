"""Write the template `sam build` uses on this machine: template.yaml with two local additions.

1. Every image function's Metadata gets DockerBuildArgs BASE_IMAGE=<base>, so infra/Dockerfile
   builds on the Debian-built stand-in (infra/lambda-base) when no registry is reachable.
2. Globals declare the variables sam local may set through --env-vars (SAM passes a variable to
   a function only when the template declares it): the S3 endpoint of a moto server and the
   tenant that requests without JWT claims act as (sam local has no JWT authorizer).

Nothing else changes: the same resources, handlers, Dockerfile and build context. Run with the
SAM CLI's Python (it parses CloudFormation's short tags):

    python infra/sam_local_template.py BASE_IMAGE OUT.yaml
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from samcli.yamlhelper import yaml_dump, yaml_parse  # type: ignore[import-not-found]

ROOT = Path(__file__).resolve().parent.parent
#: declared with empty defaults; the values come from --env-vars
LOCAL_VARIABLES = ("AWS_ENDPOINT_URL_S3", "MEMLAKE_SAM_LOCAL_TENANT")


def local_template(text: str, base_image: str) -> dict[str, Any]:
    template: dict[str, Any] = yaml_parse(text)
    functions = 0
    for resource in template["Resources"].values():
        if resource.get("Type") != "AWS::Serverless::Function":
            continue
        metadata = resource.setdefault("Metadata", {})
        if "Dockerfile" in metadata:
            metadata["DockerBuildArgs"] = {"BASE_IMAGE": base_image}
            functions += 1
    if not functions:
        raise SystemExit("template.yaml has no image functions")
    variables = template["Globals"]["Function"]["Environment"]["Variables"]
    for name in LOCAL_VARIABLES:
        variables.setdefault(name, "")
    return template


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    base_image, out = argv
    template = local_template((ROOT / "template.yaml").read_text(), base_image)
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    Path(out).write_text(yaml_dump(template))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
