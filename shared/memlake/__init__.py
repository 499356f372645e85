"""memlake: episodic memory for AI agents over MCP, stored as a Parquet lake on object storage."""

__version__ = "0.1.0"
