"""A test-only app for tests/winni_site/test_ops_upgrade.py: the "old version" has one migration
(migrations_old), the "update" (migrations_new) brings one that works and one that fails."""
