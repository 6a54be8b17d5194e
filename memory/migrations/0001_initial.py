from django.db import migrations


class Migration(migrations.Migration):
    """Placeholder so the memory app's models can depend on the vector extension."""

    initial = True
    dependencies = [("winni_site", "0001_initial")]
    operations = []
