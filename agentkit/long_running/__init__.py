"""Around the loop, each part optional and one concept: what a run needs once it grows long or outlives
its process.

    compaction    what is sent once the history grows: DropOldest, ElideToolResults, Summarize
    resume        continue a paused run, in this process or after a restart, once
    ledger        where a pause's token is claimed when it is resumed (this process's, or a folder's)
    replay        reproduce a run offline, fork it at a step, diff two runs
    otel          a run's spans for OpenTelemetry (optional extra `agentkit-lab[otel]`)

Each imports the loop core (`agentkit.core`) and nothing below it.
"""
