"""Is a tool's parameters schema one a model could be sent, and arguments could satisfy? Checked when a
tool is defined (`agentkit.core.tools`) and when a schema is checked on its own (`agentkit.core.validate`).

    check_parameters(name, schema)  an object schema; plain JSON (no NaN, Infinity or Python objects);
                                    valid JSON Schema 2020-12; every $ref resolves; satisfiable
    check_defaults(name, schema)    a generated schema's defaults fit their own parameter
    meta_schema_error(schema)       how a schema breaks the 2020-12 meta-schema, or None

Each refusal is a ToolDefinitionError naming the tool and the parameter. The validators come from
jsonschema (and jsonschema-rs, for speed); this module only words the refusals and adds the checks
JSON Schema itself does not make (a $ref that points nowhere, a minimum above its maximum).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator
from typing import Any

from .errors import ToolDefinitionError
from .strict import json_type, subschemas, walk


def check_parameters(tool_name: str, schema: Any) -> None:
    """Refuse a parameters schema that could not go on the wire, or that no arguments could satisfy.

    In order: an object schema; plain JSON (no NaN, Infinity or Python objects); valid against the
    JSON Schema 2020-12 meta-schema; every $ref resolvable; no empty enum or minimum above maximum. Each
    refusal names the parameter. (Defaults: see `check_defaults`, for generated schemas only.)
    """
    if not isinstance(schema, dict) or json_type(schema) != "object":
        raise ToolDefinitionError(f"tool {tool_name!r}: parameters must be an object schema "
                                  f"({{'type': 'object', 'properties': ...}}), got {_short(schema)}")
    names = list(schema["properties"]) if isinstance(schema.get("properties"), dict) else []

    def refuse(pointer: str, problem: str) -> ToolDefinitionError:
        return ToolDefinitionError(f"tool {tool_name!r}: {_place(pointer, names)}: {problem}")

    problem = _not_json(schema)
    if problem is not None:
        raise refuse(*problem)
    error = meta_schema_error(schema)
    if error is not None:
        pointer = "#" + "".join(f"/{p}" for p in error.absolute_path)
        raise refuse(pointer, f"not valid JSON Schema 2020-12: {shorten(error.message)}")
    for pointer, ref in _dangling_refs(schema):
        raise refuse(pointer, f"$ref {ref!r} points nowhere (schemas must be self-contained: "
                              f"put definitions under $defs)")
    for pointer, node in walk(schema):
        problem = _unsatisfiable(node)
        if problem is not None:
            raise refuse(pointer, f"{problem}: no arguments could ever pass")


def meta_schema_error(schema: dict) -> Any:
    """How `schema` breaks the JSON Schema 2020-12 meta-schema (a jsonschema SchemaError), or None.

    python-jsonschema's check_schema takes about 2 ms, and every tool is checked when it is defined (a
    benchmark defines thousands): jsonschema-rs answers "valid?" in about 10 µs, and every `pattern` is
    compiled here because it does not check the "regex" format. Only a "no" goes to python-jsonschema,
    which decides and words the refusal, so the two can never disagree on a schema that is refused.
    """
    try:
        import jsonschema_rs

        fast_yes = jsonschema_rs.meta.is_valid(schema) and all(_compiles(p) for p in _patterns(schema))
    except Exception:  # noqa: BLE001 — not installed, or an input it cannot take: ask the slow checker
        fast_yes = False
    if fast_yes:
        return None
    # jsonschema loads here, at the first refusal, not when agentkit is imported (it is slow to import)
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import SchemaError

    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError as exc:
        return exc
    return None


def _patterns(schema: dict) -> Iterator[Any]:
    for _, node in walk(schema):
        if "pattern" in node:
            yield node["pattern"]
        yield from node.get("patternProperties") or ()


def _compiles(pattern: Any) -> bool:
    try:
        re.compile(pattern)
    except (re.error, TypeError):
        return False
    return True


def check_defaults(tool_name: str, schema: dict) -> None:
    """Refuse a parameter whose default does not fit the parameter's own schema (`x: int = "abc"`).

    Only for schemas generated from a function's signature, where such a default is a bug in the code.
    A hand-written schema (`Tool.from_schema`: an MCP server's list, a benchmark's function docs) keeps
    its defaults as written: JSON Schema says a default SHOULD validate, not MUST, and real tool lists
    carry `"default": null` on a string, or a default outside its enum, as a hint to the model.
    """
    from jsonschema import Draft202012Validator

    names = list(schema["properties"]) if isinstance(schema.get("properties"), dict) else []
    validator = Draft202012Validator(schema, format_checker=Draft202012Validator.FORMAT_CHECKER)
    for name in names:
        sub = schema["properties"][name]
        if isinstance(sub, dict) and "default" in sub:
            wrong = next(iter(validator.evolve(schema=sub).iter_errors(sub["default"])), None)
            if wrong is not None:
                hint = "; if it means 'not given', allow null (in Python: `int | None = None`)" if (
                    sub["default"] is None) else ""
                raise ToolDefinitionError(
                    f"tool {tool_name!r}: {_place(f'#/properties/{name}', names)}: the default "
                    f"{_short(sub['default'])} does not fit its own schema ({shorten(wrong.message)}){hint}")


def _place(pointer: str, names: list[str]) -> str:
    """'parameter 'city'' for anything under #/properties/city; the JSON pointer elsewhere."""
    for name in names:
        prefix = f"#/properties/{name}"
        if pointer == prefix or pointer.startswith(prefix + "/"):
            inner = pointer[len(prefix):]
            return f"parameter {name!r}" + (f" (at {inner[1:]})" if inner else "")
    return "parameters" if pointer == "#" else f"parameters at {pointer}"


def _not_json(value: Any) -> tuple[str, str] | None:
    """(pointer, problem) for the first thing in `value` that JSON cannot carry, or None. No recursion."""
    stack: list[tuple[str, Any]] = [("#", value)]
    while stack:
        pointer, node = stack.pop()
        if isinstance(node, float) and not math.isfinite(node):
            return pointer, f"{node!r} is not a JSON number; the schema could not be sent to a model"
        if isinstance(node, dict):
            for key, child in node.items():
                if not isinstance(key, str):
                    return pointer, f"the key {key!r} is not a string; JSON object keys are strings"
                stack.append((f"{pointer}/{key}", child))
        elif isinstance(node, (list, tuple)):
            stack.extend((f"{pointer}/{i}", child) for i, child in enumerate(node))
        elif not (node is None or isinstance(node, (str, int, float, bool))):
            return pointer, f"a {type(node).__qualname__} is not JSON; the schema could not be sent to a model"
    return None


def _dangling_refs(schema: dict) -> Iterator[tuple[str, str]]:
    """(pointer, $ref) for every $ref that does not resolve inside the schema (remote ones included)."""
    from referencing import Registry
    from referencing.exceptions import Unresolvable
    from referencing.jsonschema import DRAFT202012

    root = DRAFT202012.create_resource(schema)
    resolver = Registry().with_resource(root.id() or "", root).resolver(root.id() or "")
    stack = [("#", schema, resolver)]
    while stack:
        pointer, node, resolver = stack.pop()
        if "$id" in node and node is not schema:  # a nested $id starts a new base for the refs below it
            resolver = resolver.in_subresource(DRAFT202012.create_resource(node))
        for key in ("$ref", "$dynamicRef"):
            if isinstance(node.get(key), str):
                try:
                    resolver.lookup(node[key])
                except Unresolvable:
                    yield f"{pointer}/{key}", node[key]
        stack.extend((pointer + suffix, sub, resolver) for suffix, sub in subschemas(node))


#: Lower and upper bounds that cannot both hold when the first is above (or, for "<", at) the second.
_BOUNDS = (("minimum", "maximum", ">"), ("exclusiveMinimum", "exclusiveMaximum", ">="),
           ("minimum", "exclusiveMaximum", ">="), ("exclusiveMinimum", "maximum", ">="),
           ("minLength", "maxLength", ">"), ("minItems", "maxItems", ">"),
           ("minProperties", "maxProperties", ">"), ("minContains", "maxContains", ">"))


def _unsatisfiable(node: dict) -> str | None:
    if node.get("enum") == []:
        return "the enum is empty (an Enum class without members?)"
    for low, high, clash in _BOUNDS:
        a, b = node.get(low), node.get(high)
        if isinstance(a, (int, float)) and isinstance(b, (int, float)) and (a > b if clash == ">" else a >= b):
            return f"{low} {a:g} is {'above' if clash == '>' else 'not below'} {high} {b:g}"
    properties = node.get("properties") if isinstance(node.get("properties"), dict) else {}
    if node.get("additionalProperties") is False and not node.get("patternProperties"):
        missing = [name for name in node.get("required") or () if name not in properties]
        if missing:
            return f"{missing[0]!r} is required but not a property of this closed object"
    return None


def _short(value: Any) -> str:
    return shorten(json.dumps(value, default=repr) if not isinstance(value, float) else repr(value))


def shorten(text: str, limit: int = 120) -> str:
    return text if len(text) <= limit else text[:limit - 3] + "..."
