"""E-mail confirmation before uploading (issue 41). Existing profiles, and accounts with
no profile, count as confirmed: only new sign-ups start unconfirmed."""

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('kbpo', '0004_corpus_tag_constraint'),
    ]

    operations = [
        migrations.AddField(
            model_name='profile',
            name='email_confirmed',
            field=models.BooleanField(default=True),
        ),
    ]
