"""Tests of winni_site/ and of the repository as a whole: the REST and MCP assembly, the admin,
operations (run, backups, export, the supervisor, upgrades, the service), the layers, types, docs."""
