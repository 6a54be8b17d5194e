"""Each input of a tool and its endpoint, declared once: its name, JSON type, default, bounds or
choices and help text. The MCP tool's arguments (its pydantic model and inputSchema) and the REST
view's serializer (hence the OpenAPI document, via drf-spectacular) are both derived from it:

    RECALL = Inputs(query=Input(str, field=SearchQueryField, help="what to look for"),
                    limit=Input(int, default=10, minimum=1, maximum=100, help="1-100"))

    @read_tool
    @RECALL.tool
    def winni_recall(**given: Any) -> ...: ...     # called with every input, defaults filled in

    class RecallApi(APIView):
        InputSerializer = RECALL.serializer()       # its OpenAPI component: RecallApiInput

The edge rules an input declares (its type, required, bounds, choices, no unknown field) are
checked by each interface in the same words (core.validation's, through core.rest's
StrictSerializer and core.mcp's argument_problem). What a value means (a UUID, a date range, a
storable text) is the service's rule, checked there for every caller (admin and tasks too).

MCP's schema is the lean one: every session's tools/list carries it. It publishes an input's type,
default, static choices and numeric bounds, never the help text (the tool's docstring says what the
model needs) nor a text's length; what an input's `rest` adds (a storage bound, allow_blank) REST's
field checks at the edge and MCP's service in its own words.

A rule the service checks for every caller can still be documented in OpenAPI from here, so no
view writes a request schema by hand: an input's `openapi` (force must be true) and the shapes a
request may take (`Inputs.any_of` / `one_of`: give content or tags; a bulk store into a new or an
existing conversation). InputsSchema adds them to the schema drf-spectacular derives."""
from __future__ import annotations

import dataclasses
import functools
import inspect
import sys
import typing
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal, TypeAlias

from drf_spectacular.drainage import get_override
from drf_spectacular.extensions import OpenApiSerializerExtension
from drf_spectacular.plumbing import get_class
from drf_spectacular.utils import OpenApiParameter
from pydantic import Field
from rest_framework import serializers

from core.rest import SHAPES_KEY, DateBoundField, StrictSerializer
from core.validation import RECENCY_MAX_DAYS

REQUIRED: Any = inspect.Parameter.empty
# DRF's field, as django-stubs types it (generic there, not at run time: named in annotations only).
RestField: TypeAlias = "serializers.Field[Any, Any, Any, Any]"
F = typing.TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True)
class Input:
    """One input. `type`: str, int, float, bool, a Literal (its values are the choices), dict (a JSON
    object), a pydantic model (MCP's typed object; REST's `field` reads it as JSON) or list[...] of
    one of those. A default of None makes the input nullable."""

    type: Any
    default: Any = REQUIRED
    help: str = ""
    minimum: float | None = None
    maximum: float | None = None
    # Characters of a text, items of a list (REST and OpenAPI; the service checks it on MCP).
    max_length: int | None = None
    # Choices known once the apps are loaded (the searchable kinds): REST checks them, MCP's service does.
    choices: Callable[[], Sequence[str]] | None = None
    # REST's field for a text (or a list's items) that says more than its type (core.rest:
    # SearchQueryField, UuidTextField, DateBoundField, ProjectField, NonBlankField ...); a ListField
    # is the whole list's.
    field: Callable[..., RestField] | None = None
    # What REST's field says beyond the shared declaration (allow_blank, a storage bound, a trim, its
    # own default or required): MCP's service checks those in its own words, and its schema stays lean.
    rest: dict[str, Any] = dataclasses.field(default_factory=dict)
    # What the OpenAPI document says of it beyond REST's field: a rule the service checks (force
    # must be true), so that the document states it without a schema written by hand.
    openapi: dict[str, Any] = dataclasses.field(default_factory=dict)

    @property
    def required(self) -> bool:
        return self.default is REQUIRED

    def but(self, **changes: Any) -> Input:
        """This input with some of its declaration changed (another default, another help text)."""
        return replace(self, **changes)

    # --- MCP -----------------------------------------------------------------------------------

    def parameter(self, name: str) -> inspect.Parameter:
        """The tool function's parameter the SDK reads (its annotation and default) to build the
        argument model and the inputSchema."""
        annotation = self.type | None if self.default is None else self.type
        bounds: dict[str, Any] = {}
        if self.minimum is not None:
            bounds["ge"] = self.minimum
        if self.maximum is not None:
            bounds["le"] = self.maximum
        default = Field(default=self.default, **bounds) if bounds else self.default
        return inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, annotation=annotation, default=default)

    # --- REST ----------------------------------------------------------------------------------

    def serializer_field(self, *, nullable: bool = True, **overrides: Any) -> RestField:
        """REST's field: the type checked by core.rest.StrictSerializer, the bounds and choices by
        the field (in the words core.validation gives MCP too), the help text for OpenAPI.
        `nullable=False`: an omitted input is not given (a query string has no null)."""
        options: dict[str, Any] = {} if self.required else {"required": False}
        if self.help:
            options["help_text"] = self.help
        if self.default is None and nullable:
            options["allow_null"] = True
        elif not self.required and self.default is not None:
            options["default"] = self.default
        if self.max_length is not None:
            options["max_length"] = self.max_length
        if {**self.rest, **overrides}.get("required"):
            options.pop("default", None)  # REST wants it given, whatever MCP's default
        if typing.get_origin(self.type) is list:
            if isinstance(self.field, type) and issubclass(self.field, serializers.ListField):
                # REST's field for the whole list (its items as JSON the service checks).
                return self.field(**{**options, **self.rest, **overrides})
            (item,) = typing.get_args(self.type)
            return serializers.ListField(child=self._single(item, {}), **{**options, **self.rest, **overrides})
        if self.minimum is not None:
            options["min_value"] = self.minimum
        if self.maximum is not None:
            options["max_value"] = self.maximum
        return self._single(self.type, {**options, **self.rest, **overrides})

    def path_parameter(self, name: str, description: str = "") -> OpenApiParameter:
        """The input as a REST path parameter (the tool takes it as an argument): a text, with the
        schema its REST field declares (a pattern, a format) and its length."""
        declared = get_override(self.field, "field") if self.field is not None else None
        schema: dict[str, Any] = dict(declared) if isinstance(declared, dict) else {"type": "string"}
        if self.max_length is not None:
            schema["maxLength"] = self.max_length
        return OpenApiParameter(name, schema, OpenApiParameter.PATH, description=description or self.help)

    def _single(self, kind: Any, options: dict[str, Any]) -> RestField:
        """The field for one value of `kind` (the input itself, or a list's item)."""
        if typing.get_origin(kind) is Literal:
            return serializers.ChoiceField(choices=list(typing.get_args(kind)), **options)
        if self.choices is not None:
            return serializers.ChoiceField(choices=[], **options)  # filled in by the serializer
        if self.field is not None:
            return self.field(**options)
        if kind is bool:
            return serializers.BooleanField(**options)
        if kind is int:
            return serializers.IntegerField(**options)
        if kind is float:
            return serializers.FloatField(**options)
        if kind is str:
            return serializers.CharField(**{"trim_whitespace": False, **options})
        raise TypeError(f"an input of type {kind!r} needs its REST field (field=...)")


# JSON Schema's type of a given (non-null) value of an input's type.
JSON_TYPES = {str: "string", int: "integer", float: "number", bool: "boolean", list: "array", dict: "object"}
# A value that may only be null (or left out): an input a shape does not take.
ONLY_NULL: dict[str, Any] = {"nullable": True, "enum": [None]}


@dataclass(frozen=True)
class Shape:
    """One shape a request may take: the inputs it gives (present, not null) and those it leaves
    out (omitted or null). The service checks it; OpenAPI documents it (Inputs.any_of, one_of)."""

    title: str = ""
    given: tuple[str, ...] = ()
    left_out: tuple[str, ...] = ()


class Inputs:
    """The inputs of one tool and its endpoint, in the order the tool lists them."""

    def __init__(self, **inputs: Input) -> None:
        self.inputs = inputs
        # The shapes a request may take: "anyOf" (at least one) or "oneOf" (exactly one) of them.
        self.shapes: tuple[str, tuple[Shape, ...]] | None = None

    def __getitem__(self, name: str) -> Input:
        return self.inputs[name]

    def any_of(self, *shapes: Shape) -> Inputs:
        """These inputs, a request taking at least one of these shapes (give content or tags)."""
        return self._shaped("anyOf", shapes)

    def one_of(self, *shapes: Shape) -> Inputs:
        """These inputs, a request taking exactly one of these shapes."""
        return self._shaped("oneOf", shapes)

    def _shaped(self, keyword: str, shapes: Sequence[Shape]) -> Inputs:
        self._chosen([name for shape in shapes for name in (*shape.given, *shape.left_out)])  # each one known
        shaped = Inputs(**self.inputs)
        shaped.shapes = (keyword, tuple(shapes))
        return shaped

    def shapes_schema(self) -> dict[str, Any]:
        """The OpenAPI keyword (anyOf or oneOf) stating the shapes a request may take, or nothing."""
        if self.shapes is None:
            return {}
        keyword, shapes = self.shapes
        return {keyword: [self._shape_schema(shape) for shape in shapes]}

    def _shape_schema(self, shape: Shape) -> dict[str, Any]:
        schema: dict[str, Any] = {"title": shape.title} if shape.title else {}
        if shape.given:
            schema["required"] = list(shape.given)
        given = {name: {"type": JSON_TYPES[typing.get_origin(self[name].type) or self[name].type]}
                 for name in shape.given}
        schema["properties"] = {**given, **{name: dict(ONLY_NULL) for name in shape.left_out}}
        return schema

    def _chosen(self, without: Sequence[str]) -> dict[str, Input]:
        unknown = set(without) - set(self.inputs)
        if unknown:
            raise ValueError(f"no such inputs: {', '.join(sorted(unknown))}")
        return {name: spec for name, spec in self.inputs.items() if name not in without}

    def tool(self, fn: F | None = None, *, without: Sequence[str] = ()) -> Any:
        """An MCP tool function taking these inputs: `fn(**given)` is called with every one of
        them, defaults filled in; the SDK reads the signature set here."""
        if fn is None:
            return functools.partial(self.tool, without=without)
        chosen = self._chosen(without)
        defaults = {name: spec.default for name, spec in chosen.items() if not spec.required}

        @functools.wraps(fn)
        def tool(**given: Any) -> Any:
            return fn(**{**defaults, **given})

        signature = inspect.signature(fn, eval_str=True)
        tool.__signature__ = signature.replace(  # type: ignore[attr-defined]  # inspect.signature honours it
            parameters=[spec.parameter(name) for name, spec in chosen.items()])
        return tool

    def serializer(self, *, without: Sequence[str] = (), nullable: bool = True, name: str = "InputsSerializer",
                   component: str | None = None, **overrides: dict[str, Any]) -> type[StrictSerializer]:
        """A core.rest.StrictSerializer with a field per input (`overrides`: more keyword arguments
        for some of them; `nullable=False`: for a query string alone). Assigned in a view's body
        (`InputSerializer = SEARCH.serializer()`) it is named like a class written there, so its
        OpenAPI component keeps the view's name; at module level it is `name`; `component` names
        the OpenAPI component outright (Meta.ref_name)."""
        chosen = self._chosen(without)
        lazy = {key: spec.choices for key, spec in chosen.items() if spec.choices is not None}

        def __init__(self: StrictSerializer, *args: Any, **kwargs: Any) -> None:
            StrictSerializer.__init__(self, *args, **kwargs)
            # Choices registered by the apps (AppConfig.ready) are read here, not at import.
            for key, choices in lazy.items():
                target = self.fields[key]
                field = target.child if isinstance(target, serializers.ListField) else target
                typing.cast(serializers.ChoiceField, field).choices = choices()

        attributes: dict[str, Any] = {key: spec.serializer_field(nullable=nullable, **overrides.get(key, {}))
                                      for key, spec in chosen.items()}
        # Read by InputsSchema (the OpenAPI document) and by the test that it does not drift.
        attributes["declared_inputs"] = self
        if lazy:
            attributes["__init__"] = __init__
        if component is not None:
            attributes["Meta"] = type("Meta", (), {"ref_name": component})
        # The caller's module, as namedtuple takes it: where the serializer is declared.
        module = sys._getframe(1).f_globals.get("__name__", __name__)
        return _NamedInView(name, (StrictSerializer,), {"__module__": module, "__qualname__": name, **attributes})


class _NamedInView(type(StrictSerializer)):  # type: ignore[misc]  # DRF's SerializerMetaclass, untyped in the stubs
    """A derived serializer's class: assigned in a class body, it takes the name it is given there
    (`RecallApi.InputSerializer`), as a class written there would."""

    def __set_name__(cls, owner: type, name: str) -> None:
        cls.__name__ = name
        cls.__qualname__ = f"{owner.__qualname__}.{name}"


class InputsSchema(OpenApiSerializerExtension):
    """The OpenAPI schema of a serializer derived from Inputs: drf-spectacular's, plus what the
    inputs declare for OpenAPI alone (each input's `openapi`, the request's shapes). A query
    string's parameters are read from it too."""

    @classmethod
    def _matches(cls, target: Any) -> bool:
        return isinstance(getattr(get_class(target), "declared_inputs", None), Inputs)

    def map_serializer(self, auto_schema: Any, direction: Any) -> dict[str, Any]:
        serializer_class: Any = get_class(self.target)  # one Inputs.serializer made (_matches)
        declared: Inputs = serializer_class.declared_inputs
        schema: dict[str, Any] = auto_schema._map_basic_serializer(self.target, direction)
        for name, field_schema in schema.get("properties", {}).items():
            field_schema.update(declared[name].openapi)
        # The shapes wait for core.rest.declare_input_rules: drf-spectacular's enum hook, which runs
        # before it, would make a component of each null-only value.
        shapes = declared.shapes_schema()
        return {**schema, SHAPES_KEY: shapes} if shapes else schema


# --- Inputs many searches share ----------------------------------------------------------------

# What "now" is for the query's time words (core.timerank; the service parses it: parse_as_of).
AS_OF = Input(str, default=None, field=DateBoundField,
              help="what \"now\" is for the query's time words (ISO 8601; default: now)")
# A ranking half-life in days (the service's rule on MCP: validate_recency).
RECENCY = Input(float, default=None, rest={"min_value": 0.01, "max_value": int(RECENCY_MAX_DAYS)},
                help="rank newer hits higher: a half-life in days (default: off)")
# Within `project`, leave out the memories and startup contexts of no project, which otherwise
# apply in every project (core.projects.search_scope).
PROJECT_ONLY = Input(bool, default=False, help="with project: that project's rows only, without the global memories "
                                               "and startup contexts (default false)")
# Deleting cannot be undone: the caller says force=true. MCP's false by default is refused by the
# service; REST needs it given.
FORCE = Input(bool, default=False, rest={"required": True}, openapi={"enum": [True]},
              help="must be true: deleting cannot be undone")
