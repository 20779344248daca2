"""The experiments behind the tutorials' charts and playgrounds: one module per tutorial, each an ordinary,
tested function (keyword arguments in, numbers or a Figure out) that a notebook calls directly or wraps in
`agentkit.widgets.playground`. Nothing here is imported by `import agentkit`, and nothing is shared between
the modules through this file: import the module you need, e.g. `from agentkit.experiments import errors`.
"""
