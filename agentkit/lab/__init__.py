"""What the notebooks share, one concept a module, all of it reachable as `lab.<name>`:

    from agentkit import lab
    model = lab.connect("openai-chat")     # HTTPModel on the simulator, or on the configured provider
    model = lab.from_env(sim_url=server)   # the configured provider, whatever its format, else the simulator
    print(lab.describe(model))             # "simulator: sim-reasoner in openai-chat format"
    client = lab.raw_client(model)         # an httpx.Client with the base URL and auth header set
    lab.SideBySide(request, response)      # two JSON documents in columns
    lab.where(request, "get_weather")      # "tools[0].function.name": where a value sits in a document

    connecting.py   from_env, connect, simulator, configured_format, simulated, how_shown, describe, raw_client
    language.py     prompt, language: the tutorials' prompts in Japanese or English (AGENTKIT_LANG)
    json_view.py    show_json, compact_json, SideBySide
    json_paths.py   where, find_paths, generalise, tagged
    sse.py          sse_events, sse_framing
"""

from .connecting import configured_format, connect, describe, from_env, how_shown, raw_client, simulated, simulator
from .json_paths import find_paths, generalise, tagged, where
from .json_view import SideBySide, compact_json, show_json
from .language import LANGUAGES, language, prompt
from .sse import sse_events, sse_framing

__all__ = ["LANGUAGES", "SideBySide", "compact_json", "configured_format", "connect", "describe", "find_paths",
           "from_env", "generalise", "how_shown", "language", "prompt", "raw_client", "show_json", "simulated",
           "simulator", "sse_events", "sse_framing", "tagged", "where"]
