"""The dev settings plus tests/upgrade_probe, whose migrations the test switches between an "old"
and an "updated" set (UPGRADE_PROBE_MIGRATIONS), as a `git pull` would."""
import os

from winni_site.settings.dev import *  # noqa: F401,F403
from winni_site.settings.dev import INSTALLED_APPS

INSTALLED_APPS = [*INSTALLED_APPS, "tests.upgrade_probe"]
MIGRATION_MODULES = {"upgrade_probe": os.environ.get("UPGRADE_PROBE_MIGRATIONS", "tests.upgrade_probe.migrations_old")}
