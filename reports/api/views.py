"""The archive API: pages, revisions, differences and the chain head, for everyone signed in.

Read-only by design: there is no create, update or delete endpoint for the archive. Every
response carries the current chain head in `X-Archive-Chain-Head` (position:hash).
"""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import generics
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from reports import diffing, selectors
from reports.api.filtersets import PageFilterSet
from reports.api.serializers import (
    ChainHeadSerializer,
    DiffQuerySerializer,
    PageDetailSerializer,
    PageSerializer,
    RevisionDiffSerializer,
    RevisionSerializer,
    RevisionSummarySerializer,
)
from reports.models import Page, PageRevision

TAG = "archive"


class ArchiveAPIMixin(APIView):
    def finalize_response(self, request: Request, response: Response, *args: Any, **kwargs: Any) -> Response:
        response = super().finalize_response(request, response, *args, **kwargs)
        if request.user and request.user.is_authenticated:
            head = selectors.chain_head()
            response["X-Archive-Chain-Head"] = f"{head.position}:{head.hash}"
        return response

    def get_page(self) -> Page:
        return selectors.page_get(viewer=self.request.user, slug=self.kwargs["slug"])


@extend_schema(tags=[TAG], summary="Archive pages, most recently changed first")
class PageListView(ArchiveAPIMixin, generics.ListAPIView):
    serializer_class = PageSerializer
    filterset_class = PageFilterSet

    def get_queryset(self) -> QuerySet[Page]:
        return selectors.page_list(viewer=self.request.user).select_related("latest_revision__page")


@extend_schema(tags=[TAG], summary="One archive page with its current revision")
class PageDetailView(ArchiveAPIMixin, generics.RetrieveAPIView):
    serializer_class = PageDetailSerializer
    lookup_field = "slug"
    filter_backends: list[Any] = []

    def get_object(self) -> Page:
        return self.get_page()


@extend_schema(tags=[TAG], summary="A page's revisions, newest first")
class RevisionListView(ArchiveAPIMixin, generics.ListAPIView):
    serializer_class = RevisionSummarySerializer
    filter_backends: list[Any] = []

    def get_queryset(self) -> QuerySet[PageRevision]:
        return selectors.revision_list(page=self.get_page())


@extend_schema(tags=[TAG], summary="One revision: its full snapshot")
class RevisionDetailView(ArchiveAPIMixin, generics.RetrieveAPIView):
    serializer_class = RevisionSerializer
    filter_backends: list[Any] = []

    def get_object(self) -> PageRevision:
        return selectors.revision_get(page=self.get_page(), number=self.kwargs["number"])


class RevisionDiffView(ArchiveAPIMixin, APIView):
    @extend_schema(
        tags=[TAG],
        summary="The difference between two revisions of a page, computed now",
        parameters=[DiffQuerySerializer],
        responses={200: RevisionDiffSerializer, 400: OpenApiResponse(description="old or new missing or invalid"),
                   404: OpenApiResponse(description="no such page or revision")},
    )
    def get(self, request: Request, slug: str) -> Response:
        query = DiffQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        page = self.get_page()
        old_number, new_number = sorted((query.validated_data["old"], query.validated_data["new"]))
        old = selectors.revision_get(page=page, number=old_number)
        new = selectors.revision_get(page=page, number=new_number)
        diff = selectors.revision_compare(old=old, new=new)
        old_snapshot, new_snapshot = selectors.snapshot(old), selectors.snapshot(new)
        fields = []
        for field in diff.fields:
            if field.name == "data":
                before, after = diffing.data_text(old_snapshot["data"]), diffing.data_text(new_snapshot["data"])
            else:
                before, after = str(old_snapshot[field.name]), str(new_snapshot[field.name])
            fields.append(
                {
                    "name": field.name,
                    "added": field.diff.added,
                    "removed": field.diff.removed,
                    "hunks": diffing.as_json(field.diff),
                    "unified": diffing.unified(
                        before, after, old_name=f"{page.slug}@{old.number}", new_name=f"{page.slug}@{new.number}"
                    ),
                }
            )
        payload = {"page": page.slug, "old": old, "new": new, "changed": diff.changed, "fields": fields}
        return Response(RevisionDiffSerializer(payload).data)


class ChainHeadView(ArchiveAPIMixin, APIView):
    @extend_schema(tags=[TAG], summary="The archive's hash-chain head", responses=ChainHeadSerializer)
    def get(self, request: Request) -> Response:
        head = selectors.chain_head()
        return Response(ChainHeadSerializer({"position": head.position, "hash": head.hash}).data)

