"""Archive API shapes. Read-only: nothing here writes."""

from __future__ import annotations

from django.utils.translation import gettext_lazy as _
from rest_framework import serializers

from core.serializers import StrictIntegerField
from reports.markdown import render as render_markdown
from reports.models import Page, PageRevision


class ChainHeadSerializer(serializers.Serializer):
    position = serializers.IntegerField(help_text=_("How many revisions the chain holds."))
    hash = serializers.CharField(help_text=_("sha256 of the whole history up to the head; keep it elsewhere."))


class RevisionSummarySerializer(serializers.ModelSerializer):
    url = serializers.SerializerMethodField()

    class Meta:
        model = PageRevision
        fields = ["number", "position", "title", "summary", "author_name", "created_at", "restored_from",
                  "prev_hash", "hash", "url"]
        read_only_fields = fields

    def get_url(self, revision: PageRevision) -> str:
        return f"/archive/{revision.page.slug}/revisions/{revision.number}/"


class RevisionSerializer(RevisionSummarySerializer):
    page: serializers.SlugRelatedField[Page] = serializers.SlugRelatedField(slug_field="slug", read_only=True)
    body = serializers.CharField(help_text=_("The Markdown text as saved."))
    html = serializers.SerializerMethodField(help_text=_("The text rendered and sanitized."))
    # DRF's metaclass takes declared fields off the class, so this does not replace `Serializer.data`;
    # the stubs cannot know that.
    data = serializers.JSONField(  # type: ignore[assignment]
        help_text=_("Structured data of a decision record; {} for other pages.")
    )

    class Meta(RevisionSummarySerializer.Meta):
        fields = ["page", *RevisionSummarySerializer.Meta.fields, "body", "html", "data"]
        read_only_fields = fields

    def get_html(self, revision: PageRevision) -> str:
        return render_markdown(revision.body)


class PageSerializer(serializers.ModelSerializer):
    latest_revision = RevisionSummarySerializer(read_only=True)
    url = serializers.SerializerMethodField()

    class Meta:
        model = Page
        fields = ["slug", "kind", "title", "source_key", "created_at", "updated_at", "latest_revision", "url"]
        read_only_fields = fields

    def get_url(self, page: Page) -> str:
        return page.get_absolute_url()


class PageDetailSerializer(PageSerializer):
    latest_revision = RevisionSerializer(read_only=True)


class DiffQuerySerializer(serializers.Serializer):
    old = StrictIntegerField(min_value=1, help_text=_("Revision number to compare from."))
    new = StrictIntegerField(min_value=1, help_text=_("Revision number to compare to."))


class DiffSegmentSerializer(serializers.Serializer):
    text = serializers.CharField()
    changed = serializers.BooleanField()


class DiffRowSerializer(serializers.Serializer):
    kind = serializers.CharField(help_text=_("equal, insert (right only), delete (left only) or replace."))
    left_number = serializers.IntegerField(allow_null=True)
    left = DiffSegmentSerializer(many=True)
    right_number = serializers.IntegerField(allow_null=True)
    right = DiffSegmentSerializer(many=True)


class DiffHunkSerializer(serializers.Serializer):
    left_start = serializers.IntegerField()
    right_start = serializers.IntegerField()
    rows = DiffRowSerializer(many=True)


class FieldDiffSerializer(serializers.Serializer):
    name = serializers.ChoiceField(choices=["title", "body", "data"])
    added = serializers.IntegerField(help_text=_("Lines added."))
    removed = serializers.IntegerField(help_text=_("Lines removed."))
    hunks = DiffHunkSerializer(many=True)
    unified = serializers.CharField(help_text=_("The same change as a unified diff."))


class RevisionDiffSerializer(serializers.Serializer):
    page = serializers.CharField()
    old = RevisionSummarySerializer()
    new = RevisionSummarySerializer()
    changed = serializers.BooleanField()
    # Not `Serializer.fields`: DRF's metaclass takes declared fields off the class (the stubs cannot know that).
    fields = FieldDiffSerializer(many=True)  # type: ignore[assignment]

