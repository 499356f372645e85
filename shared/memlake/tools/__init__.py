"""One module per MCP tool: (input, context) -> output. The registry lists them all."""
