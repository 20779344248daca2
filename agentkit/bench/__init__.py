"""agentkit.bench (placeholder docstring, written below)."""
