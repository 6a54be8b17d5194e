"""Tests of contexts/: startup contexts through their services, REST, MCP and admin."""
