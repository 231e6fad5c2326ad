import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('kbpo', '0002_document_id_refuses_commas'),
        ('estimation', '0008_scorerun_crowd'),
    ]

    operations = [
        migrations.CreateModel(
            name='CorrectionFit',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('n_answers', models.PositiveIntegerField()),
                ('n_workers', models.PositiveIntegerField()),
                ('digest', models.CharField(max_length=64)),
                ('categories', models.JSONField()),
                ('none_index', models.IntegerField()),
                ('params', models.BinaryField()),
                ('fitted_at', models.DateTimeField(auto_now=True)),
                ('corpus', models.OneToOneField(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='kbpo.corpus')),
            ],
        ),
    ]
