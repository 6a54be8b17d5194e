"""Automatic recall's record of injections now belongs to the agents app, which took it over in
its 0001 migration (and renamed the table); here it leaves winni_site's state only."""
from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ("winni_site", "0006_injection_delivered"),
        ("agents", "0001_initial"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.DeleteModel(name="Injection"),
            ],
        ),
    ]
