"""The answer cache becomes an app of its own (issue #26). Its two tables were created by the
memory app (memory 0003_librarian) and keep their names: this migration only takes the models
over in Django's state (memory 0006 lets go of them), and moves their content types, so
permissions granted on the cache stay granted."""
import django.utils.timezone
import pgvector.django.indexes
import pgvector.django.vector
from django.db import migrations, models

MODELS = ("querymemory", "librarianhourlystats")


def _move_content_types(apps, schema_editor, source: str, target: str) -> None:
    ContentType = apps.get_model("contenttypes", "ContentType")
    for model in MODELS:
        if not ContentType.objects.filter(app_label=target, model=model).exists():
            ContentType.objects.filter(app_label=source, model=model).update(app_label=target)


def forwards(apps, schema_editor):
    _move_content_types(apps, schema_editor, "memory", "librarian")


def backwards(apps, schema_editor):
    _move_content_types(apps, schema_editor, "librarian", "memory")


class Migration(migrations.Migration):

    initial = True

    dependencies = [
        ("contenttypes", "0002_remove_content_type_name"),
        ("memory", "0005_path_words_in_search_vector"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name='LibrarianHourlyStats',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('hour', models.DateTimeField(unique=True)),
                        ('asks', models.PositiveIntegerField(default=0)),
                        ('exact_hits', models.PositiveIntegerField(default=0)),
                        ('semantic_hits', models.PositiveIntegerField(default=0)),
                        ('misses', models.PositiveIntegerField(default=0)),
                    ],
                    options={
                        'verbose_name': 'answer cache hourly stats',
                        'verbose_name_plural': 'answer cache hourly stats',
                        'db_table': 'memory_librarianhourlystats',
                        'ordering': ['-hour'],
                    },
                ),
                migrations.CreateModel(
                    name='QueryMemory',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('query_hash', models.CharField(max_length=64, unique=True)),
                        ('query_text', models.TextField()),
                        ('embedding', pgvector.django.vector.VectorField(blank=True, dimensions=384, null=True)),
                        ('embedding_model', models.CharField(blank=True, default='', max_length=200)),
                        ('answer', models.TextField(blank=True, null=True)),
                        ('answer_version', models.PositiveIntegerField(default=1)),
                        ('sources', models.JSONField(blank=True, default=list)),
                        ('ask_count', models.PositiveIntegerField(default=1)),
                        ('first_asked', models.DateTimeField(default=django.utils.timezone.now)),
                        ('last_asked', models.DateTimeField(default=django.utils.timezone.now)),
                        ('compute_time_ms', models.PositiveIntegerField(blank=True, null=True)),
                        ('cache_hits', models.PositiveIntegerField(default=0)),
                        ('confidence', models.FloatField(blank=True, null=True)),
                        ('feedback_positive', models.PositiveIntegerField(default=0)),
                        ('feedback_negative', models.PositiveIntegerField(default=0)),
                        ('tier', models.CharField(choices=[('cold', 'Cold'), ('warm', 'Warm'), ('hot', 'Hot'), ('core', 'Core')], default='cold', max_length=8)),
                        ('pinned', models.BooleanField(default=False)),
                        ('expires_at', models.DateTimeField(blank=True, null=True)),
                    ],
                    options={
                        'verbose_name': 'cached query',
                        'verbose_name_plural': 'answer cache',
                        'db_table': 'memory_querymemory',
                        'indexes': [models.Index(fields=['tier'], name='qm_tier'), models.Index(fields=['-ask_count'], name='qm_ask_count'), models.Index(fields=['-last_asked'], name='qm_last_asked'), models.Index(condition=models.Q(('answer__isnull', False), ('pinned', False)), fields=['tier', 'last_asked'], name='qm_evictable'), pgvector.django.indexes.HnswIndex(condition=models.Q(('answer__isnull', False)), ef_construction=64, fields=['embedding'], m=16, name='qm_embedding_hnsw', opclasses=['vector_cosine_ops'])],
                        'constraints': [models.CheckConstraint(condition=models.Q(('tier__in', ['cold', 'warm', 'hot', 'core'])), name='qm_tier_valid'), models.CheckConstraint(condition=models.Q(('confidence__isnull', True), models.Q(('confidence__gte', 0), ('confidence__lte', 1)), _connector='OR'), name='qm_confidence_range')],
                    },
                ),
            ],
        ),
        migrations.RunPython(forwards, backwards),
    ]
