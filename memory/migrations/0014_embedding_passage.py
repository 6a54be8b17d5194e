from django.db import migrations, models

# A long chat turn's passages are vectors of its message beside its own (passage 0, every vector
# stored so far). Adding the column with a constant default rewrites no row, and the default stays
# (a worker of the previous release still writing stores passage 0); the unique index is rebuilt to
# take the passage. Messages stored before get their passages from
# `manage.py winni_reembed --passages` (or any re-embed); until then they are searched as before.


class Migration(migrations.Migration):

    dependencies = [
        ('memory', '0013_embedding_project_repair'),
    ]

    operations = [
        migrations.RemoveConstraint(
            model_name='embedding',
            name='embedding_unique_row_model',
        ),
        migrations.AddField(
            model_name='embedding',
            name='passage',
            field=models.PositiveSmallIntegerField(db_default=0, default=0),
        ),
        migrations.AddConstraint(
            model_name='embedding',
            constraint=models.UniqueConstraint(fields=('kind', 'object_id', 'model', 'passage'), name='embedding_unique_row_model_passage'),
        ),
    ]
