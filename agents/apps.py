from typing import Any

from django.apps import AppConfig


class AgentsConfig(AppConfig):
    """The coding agents' side: capture, the hook program, each agent's dialect, the installer,
    transcript import, the MCP proxy, automatic recall and its record of injections. It stands
    between the apps (whose services it calls) and winni_site (which serves its interfaces)."""

    name = "agents"
    verbose_name = "Agents"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from core import health

        health.register_check("capture", _capture_health)
        health.register_check("recall", _recall_health)


def _capture_health() -> dict[str, Any]:
    from agents.capture import capture_health

    return capture_health()


def _recall_health() -> dict[str, Any]:
    """Whether this process warmed the recall path before it listened (winni_site.asgi), and in how
    long: a web process reports "ok" from its first answer on."""
    from agents import autorecall

    report = autorecall.warm_up_report
    if report is None:
        return {"status": "cold", "warmed_in_ms": None}
    return {"status": report["status"], "warmed_in_ms": report.get("duration_ms"),
            **({"error": report["error"]} if "error" in report else {})}
