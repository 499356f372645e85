"""JSON-RPC messages on the wire: parsing a body, judging a message's envelope, encoding.

Strict where JSON-RPC 2.0, MCP and RFC 8259 are strict, so that whatever is answered is
strict UTF-8 JSON any peer can read (docs/decisions/1011-hostile-json-rpc.md):

- a body is UTF-8 (a leading BOM is tolerated), nests at most MAX_JSON_DEPTH levels and holds
  no NaN or Infinity; anything else is a parse error (-32700);
- a request id is a string or an integer: never null (MCP), never a boolean or a fraction;
- a request or notification has a string method; a message without one must be a response
  (an id and exactly one of result/error), else it is an invalid request (-32600);
- lone surrogates are rejected wherever they would be echoed or acted on: in the id or method
  (-32600), in params (-32602); tool arguments are checked by the tool's input model (a tool
  error naming the argument, memlake.models.Input).
"""

from __future__ import annotations

import json
import logging
from typing import Any, Literal

from memlake.jsonshape import LONE_SURROGATE, exceeds_depth, lone_surrogate, surrogate_at
from memlake.mcp.protocol import INVALID_PARAMS, INVALID_REQUEST, PARSE_ERROR, RpcError

log = logging.getLogger("memlake.mcp")

#: deepest nesting of a message; a tool call is 4 levels before its arguments start
MAX_JSON_DEPTH = 64
Kind = Literal["request", "notification", "response"]


class BadMessage(RpcError):
    """An RpcError about the message itself, with the id it may echo (None: answer id null)."""

    def __init__(self, code: int, message: str, msg_id: Any = None) -> None:
        super().__init__(code, message)
        self.msg_id = msg_id


class _NotJson(ValueError):
    pass


def _no_constants(name: str) -> Any:
    raise _NotJson(f"{name} is not JSON (RFC 8259 has no NaN or Infinity)")


_DECODER = json.JSONDecoder(parse_constant=_no_constants)


def parse_body(body: bytes) -> Any:
    """The decoded message; raises BadMessage(PARSE_ERROR) with a reason a client can act on."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as e:
        raise BadMessage(
            PARSE_ERROR, f"Parse error: the body is not valid UTF-8 (byte {e.start})"
        ) from None
    try:
        message = _DECODER.decode(text.removeprefix("\ufeff"))
    except RecursionError:
        message = None
        deep = True
    except _NotJson as e:
        raise BadMessage(PARSE_ERROR, f"Parse error: {e}") from None
    except ValueError:
        raise BadMessage(PARSE_ERROR, "Parse error: the body is not valid JSON") from None
    else:
        deep = exceeds_depth(message, MAX_JSON_DEPTH)
    if deep:
        raise BadMessage(
            PARSE_ERROR, f"Parse error: the JSON nests deeper than {MAX_JSON_DEPTH} levels"
        )
    return message


def _valid_id(value: Any) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, str):
        return surrogate_at(value) is None
    return isinstance(value, int)


def classify(message: dict[str, Any]) -> Kind:
    """Which kind of JSON-RPC 2.0 message this is; raises BadMessage when it is none."""
    has_id = "id" in message
    msg_id = message.get("id")
    echo = msg_id if _valid_id(msg_id) else None
    if "method" not in message:
        one_outcome = ("result" in message) != ("error" in message)
        # id null: the answer to a request whose id could not be read
        if has_id and one_outcome and (msg_id is None or echo is not None):
            return "response"
        raise BadMessage(
            INVALID_REQUEST, "Invalid Request: a request needs a method (a string)", echo
        )
    if has_id and echo is None:
        raise BadMessage(
            INVALID_REQUEST,
            "Invalid Request: id must be a string or an integer (MCP request ids are never"
            " null; booleans and fractions are not ids)",
        )
    method = message["method"]
    if not isinstance(method, str):
        raise BadMessage(INVALID_REQUEST, "Invalid Request: method must be a string", echo)
    if surrogate_at(method) is not None:
        problem = lone_surrogate(method, "method")
        raise BadMessage(INVALID_REQUEST, f"Invalid Request: {problem}", echo)
    return "request" if has_id else "notification"


def check_params(method: str, params: dict[str, Any], msg_id: Any) -> None:
    """Lone surrogates in params are invalid params; tools/call arguments are left to the
    tool's input model, which names the argument in a tool error."""
    if method == "tools/call":
        params = {k: v for k, v in params.items() if k != "arguments"}
    problem = lone_surrogate(params, "params")
    if problem:
        raise BadMessage(INVALID_PARAMS, f"Invalid params: {problem}", msg_id)


def dumps(message: dict[str, Any]) -> bytes:
    """Compact UTF-8 JSON. Never raises on text: a lone surrogate that got this far (from a
    header, say) is replaced by U+FFFD rather than failing the response."""
    text = json.dumps(message, ensure_ascii=False, separators=(",", ":"))
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        log.warning("response carried a lone surrogate; replaced with U+FFFD")
        return LONE_SURROGATE.sub("\ufffd", text).encode("utf-8")
