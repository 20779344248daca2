"""The loop core: what a learner reads top to bottom, and what a prototyper copies as one folder.

In the order they build on each other (each imports only the ones before it):

    types         the vocabulary: Message, ToolCall, ToolResult, ModelTurn, Usage, ReasoningState
    errors        every exception, in one tree
    trace         the events of a run
    strict        OpenAI strict mode: what keeps a schema from being strict, and the rewrite
    schema_check  a tool's parameters schema checked when the tool is defined
    tools         @tool: a typed function becomes a JSON Schema tool
    validate      the three gates: parse, JSON Schema, rules
    history       the invariants of a conversation (every call answered, the current turn whole, reasoning
                  state never altered, ...), and the index that lets compaction check them in constant time
    budgets       token, cost and time budgets
    policies      tool errors, approvals and Limits
    execute       running a batch of calls: sequential, threads, asyncio
    checkpoint    a paused run as plain data, and back: its JSON Schema and the loop's guarantees checked
    runs          what a run takes and gives back: Settings, Run, StopReason, Thread
    loop          the sans-I/O core: next() decides, one ordered table of stop checks says why a run stops
    drive         the two drivers, run() and arun(): a short while loop each around the core
    stream        run_stream() and arun_stream(): the same loops, handing on the model's pieces and the
                  loop's events as they happen

Nothing here does HTTP or knows a provider: the loop talks to anything with
`complete(messages, tools, options) -> ModelTurn`.
"""
