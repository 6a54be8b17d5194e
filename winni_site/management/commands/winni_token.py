"""Manage API tokens: `create NAME` prints the secret once, `list`, `revoke NAME`."""
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
        sub.add_parser("list", help="list tokens (never their secrets)")
        revoke = sub.add_parser("revoke", help="revoke a token; it stops working at once")
        revoke.add_argument("name")

    def handle(self, *args: object, **options: object) -> None:
        try:
            if options["action"] == "create":
                token, secret = auth.token_create(name=str(options["name"]))
                self.stdout.write(secret)
                self.stderr.write(f"token {token.name!r} created; the secret above is shown only once")
            elif options["action"] == "revoke":
                token = auth.token_revoke(name=str(options["name"]))
                self.stdout.write(f"revoked {token.name}")
            else:
                for token in ApiToken.objects.all():
                    state = "revoked" if token.is_revoked else "active"
                    last = token.last_used_at.isoformat() if token.last_used_at else "never"
                    self.stdout.write(f"{token.name}\t{state}\tcreated {token.created_at.isoformat()}\tlast used {last}")
        except ApplicationError as exc:
            raise CommandError(exc.message) from exc
