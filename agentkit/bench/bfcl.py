"""BFCL, the Berkeley Function Calling Leaderboard (v4, Apache-2.0), read in its own file format.

    from agentkit.bench import bfcl
    bfcl.fetch()                                  # once: the data from the bfcl-eval wheel into the cache
    cases = bfcl.load("simple_python")            # [BFCLCase(id="simple_python_0", ...), ...]
    spec = bfcl.to_tool_spec(cases[1].functions[0])
    spec.name, spec.parameters                    # "math_factorial", a JSON Schema providers accept

Each category is two JSON-lines files: `BFCL_v4_<category>.json` with `{id, question, function}` (the
conversation and the function docs) and `possible_answer/BFCL_v4_<category>.json` with `{id,
ground_truth}` (irrelevance categories have none: the right answer there is no call at all).

BFCL's function docs are almost JSON Schema, but not quite, and providers refuse them as they are:

    BFCL writes                           providers want                    why
    "type": "dict"                        "type": "object"                  JSON Schema has no "dict"
    "type": "float"                       "type": "number" (+ a hint)       ... nor "float"
    "type": "tuple"                       "type": "array"                   ... nor "tuple"
    "type": "any"                         "type": "string"                  BFCL's own checker wants a string
    "optional": true                      (dropped)                         not a keyword; `required` says it
    "name": "math.factorial"              "name": "math_factorial"          OpenAI and Anthropic allow
                                                                            [a-zA-Z0-9_-]{1,64} only

`to_tool_spec` does exactly that and nothing more, with the float hint BFCL's own FC handler adds
(" This is a float type value."), so a model sees what it would see in BFCL's runs. Gemini would
take the dots, but one spelling for every provider keeps scores comparable (BFCL does the same).
Scoring works on the *original* docs (`scoring.check_calls`) and accepts either spelling of a name.

The data comes from the `bfcl-eval` wheel on the package index (`pip download --no-deps`, never
installed: its dependencies pull in torch), checked against a pinned SHA-256, and only the files of
the categories below are unpacked into `cache_dir()`.

Left out on purpose: BFCL's multi-turn, memory, web-search, Java and JavaScript categories (they need
BFCL's own executable back-ends or another language's type system) and `live_relevance` (no answers).
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from functools import cached_property, lru_cache
from pathlib import Path
from typing import Any

from ..tools import Tool
from ..types import Message, ToolSpec

PACKAGE = "bfcl-eval"
VERSION = "2026.3.23"
WHEEL = f"bfcl_eval-{VERSION}-py3-none-any.whl"
WHEEL_SHA256 = "3bb6dfa5f0c68ad403c9ec50b00db2bb3b4cc9b38ab1ff33f48fe30d853d3a0a"
FETCH_COMMAND = "python -m agentkit.bench fetch bfcl"

#: The single-turn categories agentkit reads; each has a `live_` twin of user-contributed questions.
CATEGORIES = ("simple_python", "multiple", "parallel", "parallel_multiple", "irrelevance",
              "live_simple", "live_multiple", "live_parallel", "live_parallel_multiple", "live_irrelevance")

#: BFCL type name -> JSON Schema type. "any" becomes a string because BFCL's checker expects one.
JSON_TYPES = {"dict": "object", "object": "object", "float": "number", "number": "number", "integer": "integer",
              "string": "string", "boolean": "boolean", "array": "array", "tuple": "array", "any": "string"}
FLOAT_HINT = " This is a float type value."
_PROVIDER_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


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

    def tool_specs(self) -> list[ToolSpec]:
        return [to_tool_spec(f) for f in self.functions]

    @cached_property
    def tools(self) -> tuple[Tool, ...]:
        """The function docs as agentkit Tools, built once per case: they never run, so every trial (and every
        runner's copy of the case) can share the same frozen Tools."""
        return tuple(Tool.from_schema(spec.name, spec.description, spec.parameters, _not_executed)
                     for spec in self.tool_specs())


def _not_executed(**arguments: Any) -> Any:
    raise RuntimeError("BFCL functions are scored, not executed")


# -- where the data lives ---------------------------------------------------------------------------------

def cache_dir() -> Path:
    """AGENTKIT_CACHE, else $XDG_CACHE_HOME/agentkit, else ~/.cache/agentkit — plus bfcl-<version>."""
    root = os.environ.get("AGENTKIT_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"), "agentkit")
    return Path(root).expanduser() / f"bfcl-{VERSION}"


def is_fetched(where: Path | None = None) -> bool:
    return ((where or cache_dir()) / "manifest.json").is_file()


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
        (staging / "manifest.json").write_text(json.dumps(
            {"package": PACKAGE, "version": VERSION, "wheel_sha256": WHEEL_SHA256, "license": "Apache-2.0",
             "categories": list(CATEGORIES), "files": files}, indent=1) + "\n")
        target.parent.mkdir(parents=True, exist_ok=True)
        if target.exists():  # a half-finished earlier attempt (no manifest): replace it
            shutil.rmtree(target)
        try:
            os.replace(staging, target)  # atomic: a concurrent reader sees all of it or nothing
        except OSError:
            if not is_fetched(target):  # another process won the race: theirs is as good as ours
                shutil.copytree(staging, target, dirs_exist_ok=True)
    if not quiet:
        print(f"BFCL {VERSION}: {len(CATEGORIES)} categories in {target}")
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
    wanted = {"README.md"}
    for category in CATEGORIES:
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


# -- converting function docs -------------------------------------------------------------------------------

def provider_name(name: str) -> str:
    """A function name every provider accepts: BFCL's dots become underscores ("math.factorial")."""
    converted = name.replace(".", "_")
    if not _PROVIDER_NAME.match(converted):
        raise ValueError(f"BFCL function name {name!r} cannot be made a provider tool name")
    return converted


def to_json_schema(node: dict, where: str = "parameters") -> dict:
    """One BFCL parameter doc as JSON Schema (a new dict; the input is left alone)."""
    if not isinstance(node, dict):
        raise ValueError(f"{where}: expected an object, got {type(node).__name__}")
    out = {k: copy.deepcopy(v) for k, v in node.items() if k not in ("optional", "properties", "items", "type")}
    kind = node.get("type")
    if kind is not None:
        if kind not in JSON_TYPES:
            raise ValueError(f"{where}: BFCL type {kind!r} has no JSON Schema equivalent here")
        out["type"] = JSON_TYPES[kind]
        if kind == "float" and isinstance(out.get("description"), str):  # parameters, not list items
            out["description"] += FLOAT_HINT
    if "properties" in node:
        out["properties"] = {k: to_json_schema(v, f"{where}.{k}") for k, v in node["properties"].items()}
    if "items" in node:
        out["items"] = to_json_schema(node["items"], f"{where}[]")
    return out


def to_tool_spec(function: dict) -> ToolSpec:
    """A BFCL function doc as the ToolSpec every agentkit codec encodes."""
    parameters = to_json_schema(function.get("parameters") or {"type": "dict", "properties": {}})
    parameters["type"] = "object"
    parameters.setdefault("properties", {})
    return ToolSpec(provider_name(function["name"]), function.get("description", ""), parameters)


def original_names(functions: Any) -> dict[str, str]:
    """provider name -> BFCL name for one case's functions (a clash would make scoring ambiguous)."""
    names: dict[str, str] = {}
    for f in functions:
        converted = provider_name(f["name"])
        if converted in names and names[converted] != f["name"]:
            raise ValueError(f"{names[converted]!r} and {f['name']!r} both become {converted!r}")
        names[converted] = f["name"]
    return names
