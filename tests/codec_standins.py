"""Stand-in codecs for transport tests: a real codec with one more module fact, or a tiny new one.

`with_server_side_fallback(codec)`: the codec with SERVER_SIDE_FALLBACK = True, for as long as the
openrouter module does not say so itself (the two branches meet in main; after that this returns the
codec unchanged).
"""

from __future__ import annotations

import types


def with_server_side_fallback(codec: types.ModuleType) -> types.ModuleType:
    if getattr(codec, "SERVER_SIDE_FALLBACK", False):
        return codec
    standin = types.ModuleType(f"{codec.__name__}_with_server_side_fallback")
    standin.__dict__.update({k: v for k, v in vars(codec).items() if not k.startswith("__")})
    standin.SERVER_SIDE_FALLBACK = True
    return standin
