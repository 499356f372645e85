"""Importers: the chat histories people already have, brought in as threads and episodes.

`memlake import-chats PATH` reads ChatGPT's and Claude.ai's data exports, Claude Code's session
transcripts and the MCP reference memory server's memory.json (docs/decisions/4601). Each
format's module turns its own shapes into `model.Conversation` values (or concept records for
memory.json); `sources` finds what a path holds from its content, not its name; `pipeline`
writes conversations in batched commits, idempotently, with deterministic ids.
"""
