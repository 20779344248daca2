"""BFCL, the Berkeley Function Calling Leaderboard (v4, Apache-2.0), read in its own file format.

    from agentkit.bench import bfcl
    bfcl.fetch()                                  # once: the data from the bfcl-eval wheel into the cache
    cases = bfcl.load("simple_python")            # [BFCLCase(id="simple_python_0", ...), ...]
    spec = bfcl.to_tool_spec(cases[1].functions[0])
    spec.name, spec.parameters                    # "math_factorial", a JSON Schema providers accept

Each category is two JSON-lines files: `BFCL_v4_<category>.json` with `{id, question, function}` (the
conversation and the function docs) and `possible_answer/BFCL_v4_<category>.json` with `{id,
ground_truth}` (irrelevance categories have none: the right answer there is no call at all).

The request is BFCL's own, byte for byte: `tool_specs(format)` turns a case's function docs into
exactly the tool list BFCL's generation sends for the same case in the same model style (its
OpenAI-Completions handler for Chat, OpenRouter and Ollama; its Responses, Claude and Gemini handlers
for the other formats). That is BFCL's two steps, re-written here (not copied) and held to BFCL's own
functions on every case of every category by tests/test_bench_bfcl_request.py:

  1. the language hint   every description ends " Note that the provided function is in Python 3
                         syntax." (BFCL's load_dataset_entry adds it to every case)
  2. convert_to_tool     "dict" -> "object", "float" -> "number" with "format": "float" and " This is
                         a float type value." after its description, "tuple" -> "array", "any" and
                         unknown types -> "string"; nested properties and list items converted as
                         deep as BFCL converts them, no deeper; dots in names -> underscores; every
                         other key (optional, default, ...) kept, in the doc's own key order
                         (type, properties, required; type before description). The Gemini style
                         also moves default, optional, maximum, ... into the description.

Where the wire still differs: the Responses codec writes "type" first and always states "strict"
(BFCL omits it, and the API's default is strict=true); the Gemini codec sends the doc as
`parametersJsonSchema`, where BFCL's SDK sends it as `parameters`; and the multi-turn docs' `response`
schema, which BFCL's OpenAI-style handlers send as an extra key of the function object, is not sent
(a ToolSpec has name, description and parameters only; the Claude and Gemini styles move it into the
description, as BFCL does). No single-turn doc has one.

Scoring works on the *original* docs (`scoring.check_calls`) and expects the spelling the model was
sent (underscores), as BFCL does for every function-calling model. A call's arguments are judged as the
model sent them (`arguments_as_sent`): the object when the text is one to `json.loads`, as BFCL's decoding
reads it, else the text itself — so blank text ("" for a call without arguments) fails to decode, as in
BFCL, where the loop's own gate reads it as {} and runs the call.

The generation settings are BFCL's too (`GENERATION`: its `--temperature` default, 0.001, which every
function-calling handler sends as the request's temperature): the runner sends them unless told otherwise
and records them in the results file's run line (`python -m agentkit.bench run --temperature`).

The data comes from the `bfcl-eval` wheel on the package index (`pip download --no-deps`, never
installed: its dependencies pull in torch), checked against a pinned SHA-256. The data files of the
categories below are unpacked into `cache_dir()`, and the wheel itself is kept there: BFCL's
multi-turn back-ends (`bench.multiturn`) are imported from it at run time, never installed and never
copied into this repository (`import_from_wheel`).

Refused up front: Java and JavaScript (BFCL scores their answers by those languages' type rules,
which agentkit does not implement). Left out: memory, web search and format sensitivity (they need
BFCL's vector stores, a search API or prompt-mode handlers) and `live_relevance` (no answers).
"""

from __future__ import annotations

import copy
import hashlib
import importlib
import importlib.abc
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
import zipimport
from dataclasses import dataclass
from functools import cached_property, lru_cache
from pathlib import Path
from typing import Any

from ..core.tools import Tool
from ..core.types import Message, ModelOptions, ToolCall, ToolSpec

PACKAGE = "bfcl-eval"
VERSION = "2026.3.23"
WHEEL = f"bfcl_eval-{VERSION}-py3-none-any.whl"
WHEEL_SHA256 = "3bb6dfa5f0c68ad403c9ec50b00db2bb3b4cc9b38ab1ff33f48fe30d853d3a0a"
FETCH_COMMAND = "python -m agentkit.bench fetch bfcl"

#: The single-turn categories agentkit reads; each has a `live_` twin of user-contributed questions.
CATEGORIES = ("simple_python", "multiple", "parallel", "parallel_multiple", "irrelevance",
              "live_simple", "live_multiple", "live_parallel", "live_parallel_multiple", "live_irrelevance")

#: BFCL's multi-turn categories (bench.multiturn runs them through the loop, with BFCL's back-ends).
MULTI_TURN_CATEGORIES = ("multi_turn_base", "multi_turn_miss_func", "multi_turn_miss_param",
                         "multi_turn_long_context")
#: BFCL categories agentkit refuses, with the one line it says.
REFUSED = {c: f"BFCL's {c} scores answers by {lang}'s type rules, which agentkit does not implement"
           for c, lang in (("simple_java", "Java"), ("simple_javascript", "JavaScript"))}
#: The multi-turn back-ends' function docs, one file per class (BFCL's own mapping of its data files).
FUNC_DOC_FILES = {"GorillaFileSystem": "gorilla_file_system.json", "MathAPI": "math_api.json",
                  "MessageAPI": "message_api.json", "TwitterAPI": "posting_api.json", "TicketAPI": "ticket_api.json",
                  "TradingBot": "trading_bot.json", "TravelAPI": "travel_booking.json",
                  "VehicleControlAPI": "vehicle_control.json"}
LAYOUT = 2  # the cache's layout: 2 keeps the wheel and the multi-turn files (a layout-1 cache is fetched again)

#: BFCL type name -> JSON Schema type (the Python-language names of BFCL's GORILLA_TO_OPENAPI table);
#: a property of any other type becomes a string, as in BFCL.
JSON_TYPES = {"dict": "object", "object": "object", "float": "number", "number": "number", "integer": "integer",
              "string": "string", "boolean": "boolean", "bool": "boolean", "array": "array", "list": "array",
              "tuple": "array", "any": "string"}
FLOAT_HINT = " This is a float type value."
LANGUAGE_HINT = " Note that the provided function is in Python 3 syntax."
#: agentkit wire format -> the BFCL model style whose request it sends (BFCL's ModelStyle values).
STYLES = {"openai-chat": "openai-completions", "openrouter": "openai-completions", "ollama": "openai-completions",
          "openai-responses": "openai-responses", "anthropic": "claude", "gemini": "google"}
DEFAULT_STYLE = "openai-completions"
_PROVIDER_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
#: BFCL's generation settings (bfcl_eval/__main__.py: `--temperature`, default 0.001), as ModelOptions fields.
GENERATION = {"temperature": 0.001}


class DataNotFetched(FileNotFoundError):
    """The BFCL files are not in the cache yet; the message says which command fetches them."""


class FetchError(RuntimeError):
    """The wheel could not be downloaded or is not the one we pinned."""


@dataclass(frozen=True)
class BFCLCase:
    """One BFCL entry: the conversation, the function docs, and the accepted answers (None: no call)."""

    id: str
    category: str
    messages: tuple[Message, ...]
    functions: tuple[dict, ...]
    ground_truth: tuple[dict, ...] | None

    def tool_specs(self, format: str | None = None) -> list[ToolSpec]:
        """BFCL's request for this case in `format`'s model style (see the module docstring)."""
        return tool_specs(self.functions, style_of(format))

    @cached_property
    def tools(self) -> tuple[Tool, ...]:
        """The function docs as agentkit Tools in BFCL's OpenAI style (every format but Gemini)."""
        return self.tools_for(None)

    def tools_for(self, format: str | None) -> tuple[Tool, ...]:
        """The Tools for one wire format, built once per case and style: they never run, so every trial
        (and every runner's copy of the case) shares the same frozen Tools."""
        style = style_of(format)
        cache = self.__dict__.setdefault("_tools_by_style", {})
        if style not in cache:
            cache[style] = tuple(Tool.from_schema(spec.name, spec.description, spec.parameters, _not_executed)
                                 for spec in tool_specs(self.functions, style))
        return cache[style]


def _not_executed(**arguments: Any) -> Any:
    raise RuntimeError("BFCL functions are scored, not executed")


# -- where the data lives ---------------------------------------------------------------------------------

def cache_dir() -> Path:
    """The kit's cache (`agentkit.cache.cache_root`: AGENTKIT_CACHE, else $XDG_CACHE_HOME/agentkit, else
    ~/.cache/agentkit) plus bfcl-<version>."""
    from ..cache import cache_root

    return cache_root() / f"bfcl-{VERSION}"


def is_fetched(where: Path | None = None) -> bool:
    manifest = (where or cache_dir()) / "manifest.json"
    try:
        return json.loads(manifest.read_text()).get("layout") == LAYOUT
    except (OSError, ValueError, AttributeError):
        return False


def wheel_path(where: Path | None = None) -> Path:
    """The pinned bfcl-eval wheel in the cache (BFCL's own code is read from it, never installed)."""
    folder = where or cache_dir()
    if not is_fetched(folder):
        raise DataNotFetched(f"the BFCL data is not in {folder} yet: run `{FETCH_COMMAND}` (once)")
    return folder / WHEEL


def import_from_wheel(module: str, where: Path | None = None) -> Any:
    """Import one of BFCL's modules ("bfcl_eval.eval_checker...") from the cached wheel, never installed.

    Only names under `bfcl_eval` are served from the wheel, and only after this is first called; an
    installed bfcl-eval of another version is never picked up instead (the finder goes first)."""
    if module != "bfcl_eval" and not module.startswith("bfcl_eval."):
        raise ValueError(f"{module!r} is not one of BFCL's modules")
    wheel = wheel_path(where)
    if not any(isinstance(f, _WheelFinder) and f.wheel == str(wheel) for f in sys.meta_path):
        sys.meta_path.insert(0, _WheelFinder(str(wheel)))
    return importlib.import_module(module)


class _WheelFinder(importlib.abc.MetaPathFinder):
    """Finds `bfcl_eval.*` inside the wheel (a zip file) with the standard library's zipimport."""

    def __init__(self, wheel: str):
        self.wheel = wheel

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        if fullname != "bfcl_eval" and not fullname.startswith("bfcl_eval."):
            return None
        package = fullname.rpartition(".")[0]
        inside = self.wheel + ("/" + package.replace(".", "/") if package else "")
        return zipimport.zipimporter(inside).find_spec(fullname)  # it looks up the last part of the name


def fetch(where: Path | None = None, *, wheel: Path | None = None, quiet: bool = True) -> Path:
    """Put the BFCL files into the cache (a no-op when they are there) and return the folder.

    `wheel` uses an already downloaded wheel instead of asking the package index."""
    target = where or cache_dir()
    if is_fetched(target):
        return target
    with tempfile.TemporaryDirectory(prefix="agentkit-bfcl-") as tmp:
        path = Path(wheel) if wheel is not None else _download(Path(tmp))
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        if digest != WHEEL_SHA256:
            raise FetchError(f"{path.name} has SHA-256 {digest}, not the pinned {WHEEL_SHA256}")
        staging = Path(tmp) / "staging"
        files = _unpack(path, staging)
        shutil.copyfile(path, staging / WHEEL)
        (staging / "manifest.json").write_text(json.dumps(
            {"package": PACKAGE, "version": VERSION, "wheel_sha256": WHEEL_SHA256, "license": "Apache-2.0",
             "layout": LAYOUT, "wheel": WHEEL, "categories": list(CATEGORIES + MULTI_TURN_CATEGORIES),
             "files": files}, indent=1) + "\n")
        target.parent.mkdir(parents=True, exist_ok=True)
        if target.exists():  # a half-finished earlier attempt (no manifest): replace it
            shutil.rmtree(target)
        try:
            os.replace(staging, target)  # atomic: a concurrent reader sees all of it or nothing
        except OSError:
            if not is_fetched(target):  # another process won the race: theirs is as good as ours
                shutil.copytree(staging, target, dirs_exist_ok=True)
    if not quiet:
        print(f"BFCL {VERSION}: {len(CATEGORIES) + len(MULTI_TURN_CATEGORIES)} categories in {target}")
    return target


def _download(folder: Path) -> Path:
    command = [sys.executable, "-m", "pip", "download", "--no-deps", "--disable-pip-version-check",
               "--quiet", f"{PACKAGE}=={VERSION}", "-d", str(folder)]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=300)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise FetchError(f"could not run pip download: {exc}") from None
    path = folder / WHEEL
    if done.returncode != 0 or not path.is_file():
        last = (done.stderr.strip().splitlines() or ["(no output)"])[-1]
        raise FetchError(f"pip download {PACKAGE}=={VERSION} failed: {last}")
    return path


def _unpack(wheel: Path, folder: Path) -> dict[str, str]:
    """Only our categories' files (and BFCL's data README, which carries the license), with their SHA-256."""
    wanted = {"README.md"} | {f"multi_turn_func_doc/{name}" for name in FUNC_DOC_FILES.values()}
    for category in CATEGORIES + MULTI_TURN_CATEGORIES:
        wanted.add(f"BFCL_v4_{category}.json")
        if "irrelevance" not in category:
            wanted.add(f"possible_answer/BFCL_v4_{category}.json")
    files = {}
    with zipfile.ZipFile(wheel) as z:
        for name in sorted(wanted):
            data = z.read(f"bfcl_eval/data/{name}")
            out = folder / name
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_bytes(data)
            files[name] = hashlib.sha256(data).hexdigest()
    return files


# -- reading ------------------------------------------------------------------------------------------------

def load(category: str, where: Path | None = None) -> list[BFCLCase]:
    """Every case of one category, in file order, ground truth attached by id."""
    if category in REFUSED:
        raise ValueError(REFUSED[category])
    if category not in CATEGORIES:
        raise ValueError(f"unknown BFCL category {category!r}; choose one of: {', '.join(CATEGORIES)}")
    folder = where or cache_dir()
    if not is_fetched(folder):
        raise DataNotFetched(f"the BFCL data is not in {folder} yet: run `{FETCH_COMMAND}` (once)")
    return list(_load(category, folder))


@lru_cache(maxsize=None)
def _load(category: str, folder: Path) -> tuple[BFCLCase, ...]:  # the files never change under a version
    entries = _read_lines(folder / f"BFCL_v4_{category}.json")
    answers: dict[str, list] = {}
    if "irrelevance" not in category:
        answers = {a["id"]: a["ground_truth"] for a in _read_lines(folder / "possible_answer" /
                                                                   f"BFCL_v4_{category}.json")}
    cases = []
    for entry in entries:
        truth = None
        if "irrelevance" not in category:
            if entry["id"] not in answers:
                raise ValueError(f"BFCL {category}: no possible answer for {entry['id']}")
            truth = tuple(answers[entry["id"]])
        cases.append(BFCLCase(entry["id"], category, to_messages(entry["question"]), tuple(entry["function"]),
                              truth))
    return tuple(cases)


def _read_lines(path: Path) -> list[dict]:
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def to_messages(question: list) -> tuple[Message, ...]:
    """BFCL's `question` (a list of turns, each a list of {role, content}) as one conversation.

    The single-turn categories have exactly one turn; its system and assistant messages are kept as
    BFCL gives them (BFCL adds no system prompt of its own in native function-calling mode)."""
    if len(question) != 1:
        raise ValueError(f"a single-turn BFCL case has one turn, this one has {len(question)}")
    out = []
    for m in question[0]:
        role, content = m["role"], m["content"]
        if role not in ("system", "user", "assistant"):
            raise ValueError(f"unexpected role {role!r} in a BFCL question")
        out.append(Message(role, content))
    return tuple(out)


# -- BFCL's request: the function docs as BFCL's generation sends them ---------------------------------------

def style_of(format: str | None) -> str:
    """The BFCL model style whose request a wire format sends (BFCL's OpenAI-Completions one by default)."""
    return STYLES.get(format or "", DEFAULT_STYLE)


def provider_name(name: str) -> str:
    """A function name every provider accepts: BFCL's dots become underscores ("math.factorial")."""
    converted = name.replace(".", "_")
    if not _PROVIDER_NAME.match(converted):
        raise ValueError(f"BFCL function name {name!r} cannot be made a provider tool name")
    return converted


def with_language_hint(functions: Any) -> list[dict]:
    """Step 1 of BFCL's request: a copy of the docs whose descriptions end with BFCL's Python hint."""
    out = copy.deepcopy(list(functions))
    for function in out:
        function["description"] = function["description"] + LANGUAGE_HINT
    return out


def bfcl_function(function: dict, style: str = DEFAULT_STYLE, *, language_hint: bool = True) -> dict:
    """One function doc as BFCL's `convert_to_tool` leaves it for `style` (a new dict, keys in BFCL's order):
    {"name", "description", "parameters"}. `language_hint=False` for a doc BFCL sends without the hint (a
    multi-turn function held back until a later turn: BFCL adds the hint after moving those out)."""
    if style not in set(STYLES.values()):
        raise ValueError(f"unknown BFCL model style {style!r}; choose one of: "
                         f"{', '.join(sorted(set(STYLES.values())))}")
    item = with_language_hint([function])[0] if language_hint else copy.deepcopy(function)
    item["name"] = provider_name(item["name"])
    where = f"{function.get('name')}.parameters"
    parameters = item.get("parameters")
    if not isinstance(parameters, dict) or not isinstance(parameters.get("properties"), dict):
        raise ValueError(f"{where}: BFCL function docs have parameters with properties")
    parameters["type"] = "object"  # in place: "type" keeps its position, as in BFCL
    parameters["properties"] = _cast_properties(parameters["properties"], where)
    if style == "google":
        _google_descriptions(parameters)
    if "response" in item and style in ("claude", "google"):  # no BFCL v4 doc has one; BFCL's rule all the same
        item["description"] += f" The response field has the following schema: {json.dumps(item.pop('response'))}"
    return item


def _json_type(bfcl_type: Any, where: str, default: str | None = None) -> str:
    if bfcl_type in JSON_TYPES:
        return JSON_TYPES[bfcl_type]
    if default is None:  # list items: BFCL looks their type up without a default
        raise ValueError(f"{where}: BFCL type {bfcl_type!r} has no JSON Schema equivalent here")
    return default


def _cast_properties(properties: dict, where: str) -> dict:
    """BFCL's type conversion of one `properties` object, in place, exactly as deep as BFCL goes: nested
    properties all the way down, list items two levels (their properties again all the way)."""
    for key, value in properties.items():
        here = f"{where}.{key}"
        if "type" not in value:
            value["type"] = "string"
        else:
            if value["type"] == "float":
                value["format"] = "float"
                value["description"] += FLOAT_HINT
            value["type"] = _json_type(value["type"], here, default="string")
        if value["type"] in ("array", "object"):
            if "properties" in value:
                value["properties"] = _cast_properties(value["properties"], here)
            elif "items" in value:
                items = value["items"]
                items["type"] = _json_type(items["type"], f"{here}[]")
                if items["type"] == "array" and "items" in items:
                    items["items"]["type"] = _json_type(items["items"]["type"], f"{here}[][]")
                elif items["type"] == "object" and "properties" in items:
                    items["properties"] = _cast_properties(items["properties"], f"{here}[]")
    return properties


#: Keywords the Gemini style moves into a parameter's description (BFCL: Gemini's schema lacks them).
_GOOGLE_MOVED = (("default", "Default is"), ("optional", "Optional"), ("required", "Required"),
                 ("maximum", "Maximum value"), ("minItems", "Minimum number of items"),
                 ("maxItems", "Maximum number of items"), ("additionalProperties", "Additional properties"))


def _google_descriptions(parameters: dict) -> None:
    parameters.pop("optional", None)
    for param in parameters["properties"].values():
        param.setdefault("description", "")
        for keyword, words in _GOOGLE_MOVED:
            if keyword in param:
                param["description"] += f" {words}: {param.pop(keyword)!s}."
        if "enum" in param and param["type"] != "string":
            param["description"] += f" Enum values: {param.pop('enum')!s}."
        if "format" in param and param["type"] == "string":
            param["description"] += f" Format: {param.pop('format')!s}."


def to_tool_spec(function: dict, style: str = DEFAULT_STYLE, *, language_hint: bool = True) -> ToolSpec:
    """A BFCL function doc as the ToolSpec every agentkit codec encodes: BFCL's request for `style`."""
    item = bfcl_function(function, style, language_hint=language_hint)
    return ToolSpec(item["name"], item["description"], item["parameters"])


def tool_specs(functions: Any, style: str = DEFAULT_STYLE) -> list[ToolSpec]:
    """A case's function docs as BFCL's request for `style`, in the case's order."""
    return [to_tool_spec(f, style) for f in functions]


def original_names(functions: Any) -> dict[str, str]:
    """provider name -> BFCL name for one case's functions (a clash would make scoring ambiguous)."""
    names: dict[str, str] = {}
    for f in functions:
        converted = provider_name(f["name"])
        if converted in names and names[converted] != f["name"]:
            raise ValueError(f"{names[converted]!r} and {f['name']!r} both become {converted!r}")
        names[converted] = f["name"]
    return names


# -- what BFCL reads of a call, and what it sends with every request -----------------------------------------

def arguments_as_sent(call: ToolCall) -> Any:
    """A call's arguments as BFCL's decoding reads them: the object when the model sent one (or text that
    `json.loads` reads as one), else the text as it was sent (blank text, a cut object, a JSON list ...)."""
    raw = call.raw_arguments
    if not isinstance(raw, str):
        return raw
    try:
        value = json.loads(raw)
    except (ValueError, RecursionError):
        return raw
    return value if isinstance(value, dict) else raw


class Generating:
    """A model whose every call carries `settings` (ModelOptions fields, e.g. BFCL's GENERATION); every other
    attribute is the wrapped model's.

        model = Generating(HTTPModel("gpt-4.1-mini"), GENERATION)   # each request: "temperature": 0.001
    """

    def __init__(self, inner: Any, settings: dict):
        unknown = set(settings) - set(ModelOptions.__dataclass_fields__)
        if unknown:
            raise ValueError(f"generation settings {sorted(unknown)}: use ModelOptions fields (temperature, ...)")
        self.inner, self.settings = inner, dict(settings)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def _options(self, options: Any) -> ModelOptions:
        from dataclasses import replace

        return replace(options or ModelOptions(), **self.settings)

    def complete(self, messages: Any, tools: Any, options: Any = None) -> Any:
        return self.inner.complete(messages, tools, self._options(options))

    async def acomplete(self, messages: Any, tools: Any, options: Any = None) -> Any:
        if hasattr(self.inner, "acomplete"):
            return await self.inner.acomplete(messages, tools, self._options(options))
        import asyncio

        return await asyncio.to_thread(self.inner.complete, messages, tools, self._options(options))


def generating(model: Any, settings: dict | None) -> Any:
    """`model` with `settings` on every call (the model itself when there are none)."""
    return Generating(model, settings) if settings else model
