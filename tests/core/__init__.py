"""Tests of core/, the kernel: validation, scrubbing and redaction, time expressions, paths,
projects and recall across every kind, anchors, the MCP helpers."""
