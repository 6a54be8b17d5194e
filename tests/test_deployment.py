"""No Docker engine runs here: check that the compose file parses, has every service, and passes
every environment variable the settings read. (README's settings table: tests/test_docs.py.)"""
import re

import yaml

from tests.support import ROOT

SETTINGS_READ = re.compile(r'env_(?:str|bool|int|float|list)\(\s*"([A-Z0-9_]+)"')


def settings_variables() -> set[str]:
    names: set[str] = set()
    for path in (ROOT / "winni_site" / "settings").glob("*.py"):
        names |= set(SETTINGS_READ.findall(path.read_text()))
    return names


def test_compose_names_every_service_and_variable():
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    assert {"db", "redis", "web", "worker", "beat"} <= set(compose["services"])
    assert compose["services"]["db"]["image"].startswith("pgvector/pgvector")
    for name in ("web", "worker", "beat", "db", "redis"):
        assert "healthcheck" in compose["services"][name], name
    env = compose["services"]["web"]["environment"]
    missing = settings_variables() - set(env)
    assert not missing, f"docker-compose.yml does not set {sorted(missing)}"


def test_requirements_are_pinned_and_torch_comes_first():
    lines = [ln for ln in (ROOT / "requirements.txt").read_text().splitlines() if ln and not ln.startswith("#")]
    assert lines[0] == "torch==2.13.0"
    assert all("==" in line for line in lines), [line for line in lines if "==" not in line]
