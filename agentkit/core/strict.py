"""OpenAI strict mode: say what keeps a schema from being strict, and rewrite it so that it is.

    strict_problems({"type": "object", "properties": {"city": {"type": "string"}}})
    -> ["#: additionalProperties must be false",
        "#: 'city' must be listed in required (make it nullable if it is optional)"]

    to_strict({"type": "object", "properties": {"days": {"type": "integer", "default": 1}}})
    -> {"type": "object", "properties": {"days": {"type": ["integer", "null"], "description": "(default=1)"}},
        "required": ["days"], "additionalProperties": False}

Strict mode (constrained decoding) accepts a JSON Schema subset: every object closed with
`additionalProperties: false`, every property listed in `required` ("optional" = nullable), and none of
the keywords in STRICT_UNSUPPORTED. `@tool(strict=True)` and `Tool.from_schema(strict=True)` use
`to_strict`; `agentkit.core.validate` re-exports both functions beside the gates.

Also here, because the rewrite and the linter need them: `subschemas` / `walk` (every subschema of a
schema, with its JSON pointer), `json_type` (what a node is) and `accepts_null`.

Left out on purpose: size limits (nesting depth, property and enum counts), which change over time and
which no rewrite can fix; map types (dict[str, X]) cannot be strict: they become closed, empty objects.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Iterator
from typing import Any

__all__ = ["STRICT_FORMATS", "STRICT_UNSUPPORTED", "accepts_null", "json_type", "strict_problems",
           "subschemas", "to_strict", "walk"]

#: Keywords OpenAI strict mode rejects (its structured-outputs guide; same list as pydantic-ai's profile).
STRICT_UNSUPPORTED = ("minLength", "maxLength", "patternProperties", "unevaluatedProperties",
                      "propertyNames", "minProperties", "maxProperties", "unevaluatedItems", "contains",
                      "minContains", "maxContains", "uniqueItems",
                      # composition beyond anyOf
                      "allOf", "oneOf", "not", "if", "then", "else", "dependentRequired", "dependentSchemas")
#: The string formats strict mode knows.
STRICT_FORMATS = ("date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid")


# ----------------------------------------------------------------------------------------------------------
# Walking a schema
# ----------------------------------------------------------------------------------------------------------

# Keywords whose value is one subschema / a list of them / a name -> subschema mapping.
_ONE = ("items", "additionalProperties", "not", "if", "then", "else", "contains", "propertyNames",
        "unevaluatedItems", "unevaluatedProperties")
_MANY = ("anyOf", "oneOf", "allOf", "prefixItems", "items")  # "items" as a list: draft-4 style tuples
_NAMED = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas")
_DEFINITIONS = ("$defs", "definitions")


def subschemas(node: dict) -> Iterator[tuple[str, dict]]:
    """(JSON-pointer suffix, subschema) for every direct subschema of `node`, e.g. ("/properties/city", {...})."""
    for key in _ONE:
        if isinstance(node.get(key), dict):
            yield f"/{key}", node[key]
    for key in _MANY:
        if isinstance(node.get(key), list):
            for i, sub in enumerate(node[key]):
                if isinstance(sub, dict):
                    yield f"/{key}/{i}", sub
    for key in _NAMED:
        if isinstance(node.get(key), dict):
            for name, sub in node[key].items():
                if isinstance(sub, dict):
                    yield f"/{key}/{name}", sub


def walk(schema: dict, pointer: str = "#") -> Iterator[tuple[str, dict]]:
    """(JSON pointer, node) for `schema` and every subschema inside it, parents first."""
    stack = [(pointer, schema)]
    while stack:  # a stack, not recursion: a hand-written schema may be deep
        pointer, node = stack.pop()
        yield pointer, node
        stack.extend((pointer + suffix, sub) for suffix, sub in reversed(list(subschemas(node))))


def json_type(node: dict) -> str | None:
    """"object" for anything that describes an object (also without "type"); else the single type, or None."""
    t = node.get("type")
    if t == "object" or (isinstance(t, list) and "object" in t) or (t is None and "properties" in node):
        return "object"
    return t if isinstance(t, str) else None


_ANNOTATIONS = {"description", "title", "examples", "default", "$comment"}


def accepts_null(node: Any) -> bool:
    """Whether null is a valid instance of `node` (a schema without constraints accepts everything)."""
    if not isinstance(node, dict) or not set(node) - _ANNOTATIONS:
        return True
    t = node.get("type")
    if t == "null" or (isinstance(t, list) and "null" in t):
        return True
    if None in (node.get("enum") or ()) or ("const" in node and node["const"] is None):
        return True
    return any(accepts_null(branch) for key in ("anyOf", "oneOf") for branch in node.get(key) or ())


# ----------------------------------------------------------------------------------------------------------
# The linter
# ----------------------------------------------------------------------------------------------------------

def strict_problems(schema: dict) -> list[str]:
    """Why `schema` would be rejected by OpenAI strict mode ([] when it is fine). Each line names a place."""
    problems = []
    if json_type(schema) != "object" or "anyOf" in schema:
        problems.append("#: the root must be a plain object schema (type: object, no anyOf)")
    for pointer, node in walk(schema):
        problems += [f"{pointer}: '{key}' is not supported in strict mode" for key in STRICT_UNSUPPORTED
                     if key in node]
        if _unknown_format(node):
            problems.append(f"{pointer}: format {node['format']!r} is not supported in strict mode")
        if "default" in node:
            problems.append(f"{pointer}: 'default' is not supported in strict mode (OpenAI ignores it, "
                            f"Azure rejects it); say it in the description")
        if "$ref" in node and len(node) > 1:
            siblings = ", ".join(k for k in node if k != "$ref")
            problems.append(f"{pointer}: '$ref' with sibling keywords ({siblings}) must be inlined")
        if json_type(node) == "object":
            if node.get("additionalProperties") is not False:
                problems.append(f"{pointer}: additionalProperties must be false")
            required = set(node.get("required") or ())
            problems += [f"{pointer}: {prop!r} must be listed in required (make it nullable if it is optional)"
                         for prop in node.get("properties") or {} if prop not in required]
    return problems


# ----------------------------------------------------------------------------------------------------------
# The rewrite
# ----------------------------------------------------------------------------------------------------------

def to_strict(schema: dict) -> dict:
    """The OpenAI-strict variant of `schema` (a new dict; the input is not changed).

    Every object gets additionalProperties: false and lists every property in required; properties that
    were optional become nullable; unsupported keywords and defaults move into the description (so the
    model still reads them; gate 2 still checks the schema the model saw); oneOf becomes anyOf, allOf is
    merged, $ref with siblings is inlined. `to_strict(to_strict(s)) == to_strict(s)`.
    """
    root = copy.deepcopy(schema)
    if "type" not in root and "anyOf" not in root:
        root = {"type": "object", **root}
    definitions = {**(root.get("definitions") or {}), **(root.get("$defs") or {})}
    return _Rewrite(definitions).node(root, frozenset())


class _Rewrite:
    """One pass over a schema. `inside` holds the $refs being inlined or defined around a node: a reference
    back to one of them is left as a $ref, so a recursive schema stays finite."""

    def __init__(self, definitions: dict):
        self.definitions = definitions

    def node(self, node: dict, inside: frozenset) -> dict:
        node, inside = self.inline_ref(node, inside)
        node = self.merge_all_of(node)
        if "oneOf" in node:  # strict mode knows anyOf only; for a model's output the two say the same
            node["anyOf"] = node.get("anyOf", []) + node.pop("oneOf")
        _describe_what_strict_cannot_say(node)
        # children first, so that nullable wrappers wrap finished subschemas
        _replace_subschemas(node, lambda sub, ref: self.node(sub, inside | {ref} if ref else inside))
        if json_type(node) == "object":
            _close(node)
        return node

    def inline_ref(self, node: dict, inside: frozenset) -> tuple[dict, frozenset]:
        """$ref with siblings is inlined, like the OpenAI SDK does; a plain $ref stays as it is."""
        if "$ref" not in node or len(node) == 1:
            return node, inside
        ref = node["$ref"]
        resolved = self.resolve(node) if ref not in inside else None
        if resolved is None:  # recursive or not local: the $ref alone inside anyOf, its siblings outside
            return {"anyOf": [{"$ref": ref}], **{k: v for k, v in node.items() if k != "$ref"}}, inside
        return resolved, inside | {ref}

    def merge_all_of(self, node: dict) -> dict:
        while isinstance(node.get("allOf"), list):  # a part may bring its own allOf
            for part in node.pop("allOf"):
                part = self.resolve(part) if isinstance(part, dict) else None
                if part is None:
                    continue
                if "properties" in part:
                    node.setdefault("properties", {}).update(part.pop("properties"))
                if "required" in part:
                    node["required"] = list(dict.fromkeys([*node.get("required", []), *part.pop("required")]))
                for key, value in part.items():
                    node.setdefault(key, value)
        return node

    def resolve(self, node: dict) -> dict | None:
        """`node` with its local $ref replaced by the definition (siblings win); None if it points elsewhere."""
        for _ in range(16):  # an alias of an alias ... but never an endless loop
            if "$ref" not in node:
                return node
            target = self.lookup(node["$ref"])
            if target is None:
                return None
            node = {**copy.deepcopy(target), **{k: v for k, v in node.items() if k != "$ref"}}
        return None

    def lookup(self, ref: str) -> dict | None:
        for key in _DEFINITIONS:
            prefix = f"#/{key}/"
            if ref.startswith(prefix) and ref[len(prefix):] in self.definitions:
                return self.definitions[ref[len(prefix):]]
        return None


def _describe_what_strict_cannot_say(node: dict) -> None:
    """Defaults, unsupported keywords and unknown formats leave the schema for its description."""
    notes = []
    default = node.pop("default", None)
    if default is not None:
        notes.append(f"default={_compact(default)}")
    notes += [f"{key}={_compact(node.pop(key))}" for key in STRICT_UNSUPPORTED if key in node]
    if _unknown_format(node):
        notes.append(f"format={_compact(node.pop('format'))}")
    if notes:
        note = "(" + "; ".join(notes) + ")"
        node["description"] = f"{node['description']} {note}" if node.get("description") else note


def _unknown_format(node: dict) -> bool:
    return "format" in node and node["format"] not in STRICT_FORMATS


def _replace_subschemas(node: dict, rewrite: Callable[[dict, str | None], dict]) -> None:
    """Replace every direct subschema `sub` of `node` with rewrite(sub, ref); `ref` is the pointer of a
    definition ("#/$defs/Name") and None elsewhere."""
    for key in _ONE:
        if isinstance(node.get(key), dict):
            node[key] = rewrite(node[key], None)
    for key in _MANY:
        if isinstance(node.get(key), list):
            node[key] = [rewrite(sub, None) if isinstance(sub, dict) else sub for sub in node[key]]
    for key in _NAMED:
        if isinstance(node.get(key), dict):
            node[key] = {name: rewrite(sub, f"#/{key}/{name}" if key in _DEFINITIONS else None)
                         if isinstance(sub, dict) else sub for name, sub in node[key].items()}


def _close(node: dict) -> None:
    """An object in strict mode: closed, every property required, the optional ones nullable."""
    properties = node.get("properties") or {}
    required = set(node.get("required") or ())
    for name in properties:
        if name not in required:
            properties[name] = _nullable(properties[name])
    node.setdefault("type", "object")
    if properties or "required" in node:  # an empty object needs no `required` (and strict_problems agrees)
        node["required"] = list(properties)
    node["additionalProperties"] = False


def _nullable(node: dict) -> dict:
    if accepts_null(node):
        return node
    node = dict(node)
    if "const" in node:
        node["enum"] = [node.pop("const")]
    if not any(key in node for key in ("type", "enum", "anyOf")):
        # a bare $ref (or anything else): offer null as an alternative, keep the description outside
        outside = {k: node.pop(k) for k in ("description", "title") if k in node}
        return {"anyOf": [node, {"type": "null"}], **outside}
    if "type" in node:
        t = node["type"]
        node["type"] = [*t, "null"] if isinstance(t, list) else [t, "null"]
    if "enum" in node:
        node["enum"] = [*node["enum"], None]
    if "anyOf" in node:
        node["anyOf"] = [*node["anyOf"], {"type": "null"}]
    return node


def _compact(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)
    return text if len(text) <= 60 else text[:57] + "..."
