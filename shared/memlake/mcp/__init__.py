"""MCP for memlake: the doors and the one dispatch behind them.

- `apigw.py`: the MCP endpoint behind API Gateway (functions/mcp/app.py), over `http.py`;
- `server.py`: `memlake serve`, the same `http.py` under uvicorn (`asgi.py`);
- `stdio.py`: `memlake stdio`, one message per line;
- `direct.py`: the per-tool Lambdas (functions/<tool>/app.py), invoked directly.

The first three answer a JSON-RPC message through `rpc.answer`; all four run a tool through
`dispatch.call_tool`, whose `ToolOutcome` (`errors.py`) each door turns into its own wire
shape. See docs/decisions/1150-doors.md.
"""
