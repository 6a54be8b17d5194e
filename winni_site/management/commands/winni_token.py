"""Manage API tokens: `create NAME [--scope read|write|admin] [--project NAME ...] [--toolset SET
...]` prints the secret once, `list`, `revoke NAME`. A read token changes nothing; write (the
default) is what clients do; admin also manages tokens and exports/imports over the API. --project
limits the token to those projects' rows everywhere (docs/privacy.md, "Scoped tokens"); --toolset
to those MCP tool sets (winni_site/toolsets.py)."""
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from core.errors import ApplicationError
from winni_site import auth
from winni_site.models import ApiToken


class Command(BaseCommand):
    help = "Create, list or revoke API tokens for /mcp and /api/ (Authorization: Bearer <token>)."

    def add_arguments(self, parser: CommandParser) -> None:
        sub = parser.add_subparsers(dest="action", required=True)
        create = sub.add_parser("create", help="create a token and print its secret once")
        create.add_argument("name")
        # No `choices=`: a wrong scope is refused by the service, with the same message as elsewhere.
        create.add_argument("--scope", default="write", help="read, write (default) or admin")
        create.add_argument("--project", action="append", default=[], metavar="NAME",
                            help="limit the token to this project (slug, name or alias); repeatable")
        create.add_argument("--toolset", action="append", default=[], metavar="SET",
                            help="limit the token's MCP tools to this tool set (default, conversations, …); "
                                 "repeatable")
        sub.add_parser("list", help="list tokens (never their secrets)")
        revoke = sub.add_parser("revoke", help="revoke a token; it stops working at once")
        revoke.add_argument("name")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            if options["action"] == "create":
                token, secret = auth.token_create(name=str(options["name"]), scope=str(options["scope"]),
                                                  projects=list(options["project"]),
                                                  toolsets=list(options["toolset"]))
                self.stdout.write(secret)
                limited = ", ".join(token.projects.order_by("slug").values_list("slug", flat=True)) or "every project"
                sets = f", tool sets {', '.join(token.toolsets)}" if token.toolsets else ""
                self.stderr.write(f"token {token.name!r} created (scope {token.scope}, {limited}{sets}); "
                                  "the secret above is shown only once")
            elif options["action"] == "revoke":
                token = auth.token_revoke(name=str(options["name"]))
                self.stdout.write(f"revoked {token.name}")
            else:
                for token in ApiToken.objects.all():
                    state = "revoked" if token.is_revoked else "active"
                    last = token.last_used_at.isoformat() if token.last_used_at else "never"
                    limited = ",".join(token.projects.order_by("slug").values_list("slug", flat=True)) or "*"
                    self.stdout.write(f"{token.name}\t{state}\t{token.scope}\tprojects {limited}\t"
                                      f"tool sets {','.join(token.toolsets) or '*'}\t"
                                      f"created {token.created_at.isoformat()}\tlast used {last}")
        except ApplicationError as exc:
            raise CommandError(exc.message) from exc
