"""What every app's forms share."""

from __future__ import annotations

from typing import TypeVar

from django import forms

FieldT = TypeVar("FieldT", bound=forms.Field)


def form_field(form: forms.BaseForm, name: str, kind: type[FieldT]) -> FieldT:
    """The form's own copy of field `name`, as the `kind` of field it is.

    `form.fields` holds plain `Field`s as far as the type checker knows; a form that sets a
    `queryset` or `choices` in `__init__` names the kind here, and a field that is not of that
    kind (the declaration or the model changed) fails loudly instead of gaining a stray attribute.
    """
    field = form.fields[name]
    if not isinstance(field, kind):
        raise TypeError(f"{type(form).__name__}.{name} is a {type(field).__name__}, not a {kind.__name__}")
    return field
