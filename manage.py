#!/usr/bin/env python
"""Django's command-line utility for administrative tasks."""
import os
import sys

# Settings that stop start-up (a bad value, an unknown key in winni.env): a short message, no
# traceback; the exit status systemd's unit does not restart on (RestartPreventExitStatus).
EXIT_CONFIG = 78


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "winni_site.settings.dev")
    if sys.argv[1:2] == ["winni_run"]:
        # Before the settings start the embedded PostgreSQL and Redis: their daemons must become
        # this process's children so that it learns at once when one dies (winni_site.supervisor).
        from winni_site.supervisor import become_subreaper

        become_subreaper()
        os.environ.setdefault("WINNI_PROCESS", "run")  # its lines in the shared log file
    from django.core.exceptions import ImproperlyConfigured
    from django.core.management import execute_from_command_line

    try:
        execute_from_command_line(sys.argv)
    except ImproperlyConfigured as exc:
        from winni_site import envfile

        sys.stderr.write(f"winni: {envfile.explain(str(exc))}\n")
        sys.exit(EXIT_CONFIG)


if __name__ == "__main__":
    main()
