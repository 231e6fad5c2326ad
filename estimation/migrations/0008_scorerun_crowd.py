from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('estimation', '0007_stored_report_and_viewer_bodies'),
    ]

    operations = [
        migrations.AddField(
            model_name='scorerun',
            name='crowd',
            field=models.JSONField(blank=True, null=True),
        ),
    ]
