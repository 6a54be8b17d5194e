from django.db import migrations


class Migration(migrations.Migration):
    operations = [
        migrations.RunSQL("CREATE TABLE upgrade_probe_note (id serial PRIMARY KEY, body text NOT NULL); "
                          "INSERT INTO upgrade_probe_note (body) VALUES ('written by the old version')"),
    ]
