"""The agents' side becomes an app of its own (issue #46). Automatic recall's record of injections
was created by winni_site (0004_injection, 0006_injection_delivered): this migration takes the
model over in Django's state (winni_site 0007 lets go of it), moves its content type, so
permissions granted on it stay granted, and renames its table to agents_injection (every row
kept; the indexes and the check constraint keep their names)."""
import django.contrib.postgres.fields
import django.db.models.deletion
import django.utils.timezone
from django.db import migrations, models


def _move_content_type(apps, schema_editor, source: str, target: str) -> None:
    ContentType = apps.get_model("contenttypes", "ContentType")
    if not ContentType.objects.filter(app_label=target, model="injection").exists():
        ContentType.objects.filter(app_label=source, model="injection").update(app_label=target)


def forwards(apps, schema_editor):
    _move_content_type(apps, schema_editor, "winni_site", "agents")


def backwards(apps, schema_editor):
    _move_content_type(apps, schema_editor, "agents", "winni_site")


class Migration(migrations.Migration):

    initial = True

    dependencies = [
        ("contenttypes", "0002_remove_content_type_name"),
        ("conversations", "0004_conversation_project"),
        ("core", "0001_initial"),
        ("winni_site", "0006_injection_delivered"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name="Injection",
                    fields=[
                        ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                        ("session_id", models.TextField()),
                        ("trigger", models.CharField(choices=[("prompt", "Prompt"), ("file", "File"), ("call", "Call")], default="prompt", max_length=8)),
                        ("file_path", models.TextField(blank=True, default="")),
                        ("text", models.TextField()),
                        ("items", models.JSONField(default=list)),
                        ("item_keys", django.contrib.postgres.fields.ArrayField(base_field=models.TextField(), default=list, size=None)),
                        ("gate", models.JSONField(default=dict)),
                        ("created_at", models.DateTimeField(default=django.utils.timezone.now)),
                        ("reset_at", models.DateTimeField(blank=True, null=True)),
                        ("delivered", models.BooleanField(default=True)),
                        ("undelivered_reason", models.TextField(blank=True, default="")),
                        ("message", models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name="injections", to="conversations.message")),
                        ("project", models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name="injections", to="core.project")),
                    ],
                    options={
                        "db_table": "winni_site_injection",
                        "ordering": ["-created_at"],
                        "indexes": [models.Index(fields=["session_id", "reset_at"], name="injection_session"), models.Index(fields=["-created_at"], name="injection_created")],
                        "constraints": [models.CheckConstraint(condition=models.Q(("trigger__in", ["prompt", "file", "call"])), name="injection_trigger_valid")],
                    },
                ),
            ],
        ),
        migrations.RunPython(forwards, backwards),
        # The table takes the app's name (ALTER TABLE … RENAME: the rows stay where they are).
        migrations.AlterModelTable(name="injection", table=None),
    ]
