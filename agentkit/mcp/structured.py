"""Structured tool output: a tool's `outputSchema` from its return type, and the check of what it returned.

    @tool
    def get_weather(city: str) -> Weather: ...        # a TypedDict, a pydantic model, a dataclass, dict, list ...

    output_schema(get_weather)     -> ({"type": "object", "properties": {"city": ..., "temp_c": ...}, ...}, False)
    output_schema(count_cities)    -> ({"type": "object", "properties": {"result": {"type": "integer"}},
                                        "required": ["result"]}, True)     # `-> int`: wrapped under "result"
    output_problem(schema, value)  -> None, or the first way `value` breaks the schema (path, keyword, words)

The input schema of a tool comes from its parameters; the output schema comes the same way, with pydantic,
from the return annotation. MCP's specification has both since revision 2025-06-18 ("Add support for
structured tool output", its changelog), and in both revisions the kit speaks a tool that declares an
`outputSchema` "MUST provide structured results that conform to this schema" and clients "SHOULD validate
structured results against this schema" (the specification's tools page, "Output Schema"). A result that
is not an object goes out as `{"result": value}` under a schema wrapped the same way (2025-11-25 wants an
object there; the MCP SDK's own server wraps the same way), so one shape serves both revisions.

A tool whose return type has no JSON Schema gets an error naming the tool and the type, raised when the
server is built: the server then refuses that tool alone. On Python < 3.12 pydantic refuses
`typing.TypedDict` (it wants `typing_extensions.TypedDict`), the case met most often.

Left out on purpose: return types that say nothing a schema could check (`str`, `Any`, `object`, no
annotation, an `Update`): those tools answer in text, as before, with no `outputSchema`.
"""

from __future__ import annotations

import typing
from typing import Any

from ..core.errors import ToolDefinitionError
from ..core.tools import Tool, Update
from ..core.validate import schema_gate

#: Return annotations that declare no structure: the tool answers in text, without an outputSchema.
_UNSTRUCTURED: tuple[Any, ...] = (str, Any, object, type(None), None, Update)


class OutputSchemaError(ToolDefinitionError):
    """A tool's return type has no JSON Schema; the MCP server refuses that tool (and serves the others)."""


def output_schema(tool: Tool) -> tuple[dict | None, bool]:
    """(the tool's `outputSchema`, whether its values are wrapped as {"result": value}); (None, False) for
    a tool that declares no structure. Raises OutputSchemaError when the return type has no JSON Schema."""
    hint = _return_hint(tool)
    if hint in _UNSTRUCTURED or typing.get_origin(hint) is typing.Union and str in typing.get_args(hint):
        return None, False
    from pydantic import TypeAdapter

    try:
        schema = TypeAdapter(hint).json_schema(mode="serialization")
    except Exception as exc:  # noqa: BLE001 — pydantic raises several kinds; all mean "no schema"
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise OutputSchemaError(f"tool {tool.name!r}: its return type {_type_name(hint)} cannot become an output "
                                f"schema: {first}") from None
    if schema.get("type") == "object":
        return schema, False
    wrapped: dict[str, Any] = {"type": "object", "properties": {"result": schema}, "required": ["result"]}
    if "$defs" in schema:  # definitions must sit at the root for "#/$defs/..." references to resolve
        wrapped["$defs"] = schema.pop("$defs")
    return wrapped, True


def structured_value(value: Any, wrapped: bool) -> Any:
    """What goes into `structuredContent` for a tool's (JSON-ready) return value."""
    return {"result": value} if wrapped else value


def output_problem(schema: dict, value: Any, name: str | None = None) -> dict | None:
    """None when `value` fits `schema`, else {"message", "path", "keyword"} of the first thing wrong.

    The paths are those of the structured content as sent (`$.temp_c`, `$.result[2]`)."""
    if value is None:
        return {"message": "the tool declares an outputSchema but the result has no structuredContent",
                "path": None, "keyword": "outputSchema"}
    checked = schema_gate(schema, value, name=name)  # the loop's own schema gate: same paths, same words
    if checked.ok:
        return None
    first = checked.errors[0]
    return {"message": f"the result breaks the tool's outputSchema: {checked.message(limit=3)}", "path": first.path,
            "keyword": first.keyword}


def _return_hint(tool: Tool) -> Any:
    fn = tool.fn
    try:
        hints = typing.get_type_hints(fn, include_extras=True)
    except Exception as exc:  # noqa: BLE001 — a return annotation that does not resolve
        raise OutputSchemaError(f"tool {tool.name!r}: its return annotation does not resolve: {exc}") from None
    hint = hints.get("return")
    if typing.get_origin(hint) is typing.Annotated:
        hint = typing.get_args(hint)[0]
    return hint


def _type_name(hint: Any) -> str:
    return getattr(hint, "__name__", None) or repr(hint)
