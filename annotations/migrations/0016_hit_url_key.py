"""Unguessable task-page keys for HITs (issue 41): existing HITs get one each, so
their old sequential /annotate/hit/<id>/ URLs stop answering."""

from django.db import migrations, models

import annotations.models


def fill_keys(apps, schema_editor):  # noqa: ANN001, ARG001
    Hit = apps.get_model("annotations", "Hit")
    for hit in Hit.objects.filter(url_key__isnull=True).only("pk").iterator():
        Hit.objects.filter(pk=hit.pk).update(url_key=annotations.models.new_url_key())


class Migration(migrations.Migration):

    dependencies = [
        ('annotations', '0015_assignment_refusal_code'),
    ]

    operations = [
        migrations.AddField(
            model_name='hit',
            name='url_key',
            field=models.CharField(max_length=43, null=True, editable=False),
        ),
        migrations.RunPython(fill_keys, migrations.RunPython.noop),
        migrations.AlterField(
            model_name='hit',
            name='url_key',
            field=models.CharField(default=annotations.models.new_url_key, editable=False, help_text='The task page\'s path key (/annotate/hit/<key>/).', max_length=43, unique=True),
        ),
    ]
