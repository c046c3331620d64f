"""The quorum and fair-share versions live in the one store (governed) now: policy's 0003 moved them, then this
removes the old table."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("committee", "0018_decision_rationale_text_requestevent_detail_text"),
        # Its rows are carried into the store first.
        ("policy", "0003_policy_values_from_versions"),
    ]

    operations = [migrations.DeleteModel(name="GovernanceVersion")]
