"""Tests of agents/: capture (the real agent CLIs included), the hook program, dialects, the
installer, transcript import, the MCP proxy, automatic recall, injections, the traffic corpus."""
