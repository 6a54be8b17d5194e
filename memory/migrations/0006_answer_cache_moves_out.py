"""The answer cache's models now belong to its own app (memory.librarian, label "librarian"),
which took them over in its 0001 migration; the tables stay where they are (state only)."""
from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ("memory", "0005_path_words_in_search_vector"),
        ("librarian", "0001_initial"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.DeleteModel(name="QueryMemory"),
                migrations.DeleteModel(name="LibrarianHourlyStats"),
            ],
        ),
    ]
