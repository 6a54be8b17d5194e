from django.apps import AppConfig


class ConversationsConfig(AppConfig):
    name = "conversations"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from conversations.models import Message
        from conversations.services import message_embed_parts
        from winni_site.searchable import Searchable, register

        register(Searchable(kind="message", model=Message, text=lambda m: m.content,
                            label=lambda m: f"turn {m.turn_number} ({m.role})", embed_parts=message_embed_parts,
                            batch_order=("conversation_id", "turn_number")))
