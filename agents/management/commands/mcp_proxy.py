"""Run the MCP logging proxy (seed 001 §3.3, option B).

Why: an MCP client pointed at the proxy (`http://LISTEN/<name>/mcp`) reaches the upstream MCP
server unchanged, and every tool call and result lands in Winni as `tool` messages, one
conversation per client session — without asking the agent to log anything."""
from __future__ import annotations

from typing import Any

import uvicorn
from django.core.management.base import BaseCommand, CommandError, CommandParser

from agents.proxy import ProxyLog, Upstream, build_proxy_app
from core import projects
from core.errors import ApplicationError


def parse_upstreams(specs: list[str], header_specs: list[str]) -> dict[str, Upstream]:
    upstreams: dict[str, Upstream] = {}
    for spec in specs:
        name, sep, url = spec.partition("=")
        if not sep or not name or not url.startswith(("http://", "https://")):
            raise CommandError(f"--upstream must be NAME=http(s)://…, got {spec!r}")
        if "/" in name:
            raise CommandError(f"--upstream: the name {name!r} must not contain '/'")
        upstreams[name] = Upstream(name=name, url=url)
    for spec in header_specs:
        name, sep, header = spec.partition("=")
        key, colon, value = header.partition(":")
        if not sep or not colon or name not in upstreams or not key.strip():
            raise CommandError(f"--header must be NAME=Header-Name: value for a named upstream, got {spec!r}")
        upstreams[name].headers[key.strip()] = value.strip()
    return upstreams


class Command(BaseCommand):
    help = "Relay MCP (streamable HTTP) to upstream servers, storing each tools/call and result in Winni."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--listen", default="127.0.0.1:9000", help="HOST:PORT to serve on")
        parser.add_argument("--upstream", action="append", default=[], metavar="NAME=URL", required=True,
                            help="an upstream MCP endpoint, served at /NAME/mcp (repeatable)")
        parser.add_argument("--header", action="append", default=[], metavar="NAME=Header: value",
                            help="a header added to requests to upstream NAME, e.g. its auth (repeatable)")
        parser.add_argument("--project", metavar="NAME",
                            help="store the proxied sessions in this existing project (slug or name); default: global")

    def handle(self, *args: Any, **options: Any) -> None:
        host, sep, port = options["listen"].rpartition(":")
        if not sep or not port.isdigit() or not host:
            raise CommandError(f"--listen must be HOST:PORT, got {options['listen']!r}")
        upstreams = parse_upstreams(options["upstream"], options["header"])
        project = None
        if options["project"]:
            try:
                project = projects.project_get(name=options["project"]).slug
            except ApplicationError as exc:
                raise CommandError(f"--project: {exc.detail}") from exc
        log = ProxyLog(project=project)
        app = build_proxy_app(upstreams, log)
        for upstream in upstreams.values():
            self.stderr.write(f"http://{host}:{port}/{upstream.name}/mcp -> {upstream.url}")
        try:
            uvicorn.run(app, host=host, port=int(port), log_level="warning", access_log=False)
        finally:
            log.close()
            self.stderr.write(f"stored {log.stored} tool message(s), {log.failed} failed, {log.dropped} dropped")
