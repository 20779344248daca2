"""What agentkit's command lines share: a parser whose every error is one line, and flag values checked on the way in.

    parser = OneLineParser(prog="python -m agentkit.bench")
    parser.add_argument("--timeout", type=seconds, default=60.0)          # 0, -5, nan, inf: refused
    parser.add_argument("--max-retries", type=whole(0), default=2)          # -1, 1.5: refused
    parser.add_argument("--out", type=folder, default="bench-results")      # an existing file: refused

A bad value ends the command with exit code 2 and one line on stderr naming the flag and what it takes
(argparse's own error prints the whole usage first; a value that passed the parser and failed deep inside
printed a traceback). Values are checked here, where the flag's name is known, not in the code they feed.

Left out on purpose: the subcommands themselves and their messages for errors found later (each CLI's own).
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable
from pathlib import Path
from urllib.parse import urlsplit

__all__ = ["OneLineParser", "folder", "http_url", "number", "port", "seconds", "whole", "writable_file"]

USAGE_ERROR = 2


class OneLineParser(argparse.ArgumentParser):
    """argparse, with its errors in one line (and its subcommands' too, when made with parser_class=)."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(USAGE_ERROR, f"{self.prog}: error: {' '.join(message.split())} (see --help)\n")


def _float(text: str, what: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not {what}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"{text!r} is not {what} (a finite one)")
    return value


def seconds(text: str) -> float:
    """A number of seconds above 0 (not nan, not inf)."""
    value = _float(text, "a number of seconds")
    if value <= 0:
        raise argparse.ArgumentTypeError(f"{text} must be a number of seconds above 0")
    return value


def number(minimum: float = 0.0, *, above: bool = False) -> Callable[[str], float]:
    """A finite number >= minimum (> minimum when `above`)."""
    def check(text: str) -> float:
        value = _float(text, "a number")
        if value < minimum or (above and value == minimum):
            raise argparse.ArgumentTypeError(f"{text} must be {'above' if above else 'at least'} {minimum:g}")
        return value

    check.__name__ = "number"  # argparse names the type in "invalid <name> value" messages
    return check


def whole(minimum: int = 0, maximum: int | None = None) -> Callable[[str], int]:
    """A whole number in [minimum, maximum]."""
    def check(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if value < minimum or (maximum is not None and value > maximum):
            bounds = f"at least {minimum}" if maximum is None else f"from {minimum} to {maximum}"
            raise argparse.ArgumentTypeError(f"{text} must be {bounds}")
        return value

    check.__name__ = "whole number"
    return check


def port(text: str) -> int:
    """A TCP port, 0 (the system picks a free one) to 65535."""
    return whole(0, 65535)(text)


def folder(text: str) -> Path:
    """A folder to write into: it may not exist yet, but it must not be a file."""
    path = Path(text)
    if path.exists() and not path.is_dir():
        raise argparse.ArgumentTypeError(f"{text} is a file, not a folder")
    return path


def writable_file(text: str) -> Path:
    """A file to read or write: it may not exist yet, but it must not be a folder."""
    path = Path(text)
    if path.is_dir():
        raise argparse.ArgumentTypeError(f"{text} is a folder, not a file")
    return path


def http_url(text: str) -> str:
    """An http:// or https:// URL with a host, e.g. http://localhost:11434/v1."""
    try:
        parts = urlsplit(text.strip())
        parts.port  # noqa: B018 - raises ValueError for a port that is not a number
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"{text!r} is not a URL ({exc})") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise argparse.ArgumentTypeError(f"{text!r}: write an http:// or https:// URL, e.g. http://localhost:11434/v1")
    return text.strip()
