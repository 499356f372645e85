"""MCP over Streamable HTTP (stateless, JSON responses): one transport for every door."""
