from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [("upgrade_probe", "0001_initial")]
    operations = [migrations.RunSQL("ALTER TABLE upgrade_probe_note ADD COLUMN added_by_the_update text")]
