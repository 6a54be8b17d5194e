from django.db import migrations


class Migration(migrations.Migration):
    """Fails after 0002 was applied (and committed): the database must be restored from the backup."""

    dependencies = [("upgrade_probe", "0002_add_column")]
    operations = [migrations.RunSQL("UPDATE upgrade_probe_note SET body = body || (1 / 0)::text")]
