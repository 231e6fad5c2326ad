from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('annotations', '0005_bonus_plural'),
    ]

    operations = [
        migrations.AddField(
            model_name='pairlabel',
            name='posterior',
            field=models.JSONField(blank=True, default=dict, help_text='P(truth) per predicate (and no_relation).'),
        ),
        migrations.AddField(
            model_name='pairlabel',
            name='prior',
            field=models.JSONField(blank=True, default=dict, help_text='Crowd-wide share of each answer in the posterior.'),
        ),
        migrations.AddField(
            model_name='pairlabel',
            name='p_correct',
            field=models.FloatField(blank=True, help_text='Probability that the stored label is right.', null=True),
        ),
    ]
