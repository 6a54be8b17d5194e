"""The kernel every app stands on: errors, validation, logs, the searchable registry and recall,
MCP helpers, connections, env parsing, migration helpers, the health-check registry, actor names
and the LLM chat clients. It imports no app and nothing from winni_site (tests/winni_site/test_layers.py);
see docs/architecture.md."""
