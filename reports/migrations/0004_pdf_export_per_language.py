# A PDF per revision and language; exports made before are labelled with the default language.

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('reports', '0003_buffer_fund'),
    ]

    operations = [
        migrations.AddField(
            model_name='pdfexport',
            name='language',
            field=models.CharField(choices=[('en', 'English'), ('zh-hans', '简体中文')], default='en', max_length=10, verbose_name='language'),
            preserve_default=False,
        ),
        migrations.AlterField(
            model_name='pdfexport',
            name='revision',
            field=models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='pdf_exports', to='reports.pagerevision', verbose_name='revision'),
        ),
        migrations.AddConstraint(
            model_name='pdfexport',
            constraint=models.UniqueConstraint(fields=('revision', 'language'), name='pdfexport_one_per_revision_language'),
        ),
    ]
