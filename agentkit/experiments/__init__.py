"""Experiments the tutorials measure: ordinary, tested functions that run something (a batch of tool calls,
a call against an injected fault), return what happened as plain values, and draw it with `agentkit.viz`.
The notebooks' charts and ipywidgets playgrounds call them, so a playground is a thin shell around a
function you can also call, read and test on its own. One module per tutorial topic; import the module
you need (`from agentkit.experiments import parallel`): this package imports nothing by itself, and it
sits above everything else in the house (it uses the loop, the simulator, the HTTP client and the charts).
"""
