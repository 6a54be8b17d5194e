"""Sent after a transaction that stored messages commits, so other apps (the embedding pipeline)
can follow up without conversations importing them."""
from django.dispatch import Signal

# kwargs: message_ids: list[uuid.UUID]
messages_stored = Signal()
