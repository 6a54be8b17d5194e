"""Tests of conversations/: its services, REST, MCP and admin, search, passages, tool calls, digests."""
