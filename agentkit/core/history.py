"""The invariants of a conversation, what a `compact=` hook may send, and the index that lets the loop
check it without walking the history again.

A *round* is an assistant message with the tool messages that answer it (a final answer is a round
without calls); a *turn* is a user message and everything up to the next one (`split_history` cuts a
history into them). The *current turn* is the last user message — the request — and every round since
it: the tool cycle the model is in the middle of. Whatever is sent to a model keeps these
(`check_history` says, in one sentence, which one a history breaks):

1. a call is never separated from its result: rounds are kept or dropped whole;
2. the current turn is sent whole, as it is. The model reads its own calls and results to know what it
   has done: drop one and it calls that tool again, until the step cap. And the providers check the
   reasoning state of the current turn (Gemini wants each step's thought signature, Anthropic the
   thinking block of the last assistant turn) and bind it to what came before it;
3. reasoning state is never altered. An earlier turn keeps its state only while everything before it is
   sent as it was; after the first change it goes without. Anthropic's models with preserved thinking
   refuse a kept thinking block whose prefix changed ("Invalid `signature` in `thinking` block. The block
   is bound to a different conversation."), and "remove the thinking" is what its documentation says to
   do once the history was edited; no provider needs an earlier turn's state back. The message's own
   fields a codec keeps with the state (Responses' `phase`) are not reasoning and stay;
4. every system message is kept, and after them what is sent starts with a user message: Gemini answers a
   history that starts with a function call with a 400, "Please ensure that function call turn comes
   immediately after a user turn or after a function response turn." (google-gemini/gemini-cli issue 11814).

So a compaction may only change the earlier turns, and what it decides depends on them alone: within a
tool cycle every request carries the same prefix (the cycle's own thinking stays bound to it), also after
a pause and a restart. The strategies that ship are in `agentkit.long_running.compaction`.

What the loop sends (`CompactedRequests`): a hook is asked before every model call. A plain function
`messages -> messages` is checked whole, each time. The kit's strategies answer a `Plan` instead (`head`,
what replaces the earlier turns, and `keep_from`, where the current turn starts), computed from a
`HistoryIndex` (every message measured once, as it is appended, kept by the loop and carried by the
Thread); the same plan comes back for every request of a cycle, so it is checked once and the request is
extended by the new messages only. A step then costs the same at message 10 as at message 10,000.
"""

from __future__ import annotations

from array import array
from typing import Any, Callable, NamedTuple, Sequence

from .types import Message, json_shape
from .validate import MAX_BYTES

#: A compaction hook: the whole history in, what to send out (or, for the kit's strategies, a Plan).
Compactor = Callable[[list[Message]], list[Message]]


def message_size(message: Message) -> int:
    """Characters a message adds to a request: its text, and each call's name and arguments (arguments
    given as an object measured without recursion). The stand-in for tokens the triggers read."""
    size = len(message.content or "")
    for call in message.tool_calls:
        raw = call.raw_arguments
        size += len(call.name) + (len(raw) if isinstance(raw, str) else json_shape(raw, max_size=MAX_BYTES)[0])
    return size


def message_chars(messages: Sequence[Message]) -> int:
    """`message_size` of every message, summed."""
    return sum(map(message_size, messages))


Groups = list[list[Message]]


def split_history(messages: Sequence[Message]) -> tuple[list[Message], Groups, list[Message], Groups]:
    """(system messages, earlier turns, the current request, the current turn's rounds).

    An earlier turn is a list starting with its user message; a round is an assistant message followed by
    the tool messages answering it. The current request is the last user message (and anything before
    the first user message that is not a system prompt, kept with it)."""
    system = [m for m in messages if m.role == "system"]
    rest = [m for m in messages if m.role != "system"]
    last_user = max((i for i, m in enumerate(rest) if m.role == "user"), default=None)
    if last_user is None:
        return system, [], [], _rounds(rest)
    earlier: list[list[Message]] = []
    for m in rest[:last_user]:
        if m.role == "user" or not earlier:
            earlier.append([m])
        else:
            earlier[-1].append(m)
    return system, earlier, [rest[last_user]], _rounds(rest[last_user + 1:])


def _rounds(messages: Sequence[Message]) -> list[list[Message]]:
    rounds: list[list[Message]] = []
    for m in messages:
        if m.role == "tool" and rounds:
            rounds[-1].append(m)
        else:
            rounds.append([m])
    return rounds


# -- the invariants ----------------------------------------------------------------------------------------

def pairing_problem(messages: Sequence[Message]) -> tuple[int, str] | None:
    """(index, sentence) of the first place where a call goes without its one result right after its turn,
    or a result without its call; None when every call is answered (invariant 1)."""
    pending: set[str] = set()
    opened = 0
    for i, m in enumerate(messages):
        if m.role == "tool":
            if m.tool_call_id not in pending:
                return i, f"a tool result ({m.tool_call_id}) is sent without the call it answers right before it"
            pending.discard(m.tool_call_id)
            continue
        if pending:
            return opened, f"call {sorted(pending)[0]} is sent without its result"
        pending, opened = {c.id for c in m.tool_calls}, i
    if pending:
        return opened, f"call {sorted(pending)[0]} is sent without its result"
    return None


def _same(a: Message, b: Message) -> bool:
    return a is b or a == b


def head_problem(head: Sequence[Message], earlier: Sequence[Message], systems: Sequence[Message],
                 request: int | None = None) -> str | None:
    """What is wrong with sending `head` in place of the earlier turns — `earlier`, everything before the
    current request, or its first `request` messages — in one sentence; None if nothing. Invariants 1, 3
    and 4; `systems` are the system messages of the earlier turns. Reads `earlier` only up to the first
    change (a strategy's head is checked in the time of its own length)."""
    end = len(earlier) if request is None else request
    broken = pairing_problem(head)
    if broken is not None:
        return broken[1]
    for m in systems:
        if not any(_same(s, m) for s in head if s.role == "system"):
            return "the system prompt is missing from what is sent"
    first = next((m for m in head if m.role != "system"), None)
    if first is not None and first.role != "user":
        return "what is sent starts with the model speaking; Gemini refuses a call that no user turn precedes"
    unchanged = 0
    while unchanged < min(len(head), end) and _same(head[unchanged], earlier[unchanged]):
        unchanged += 1
    if unchanged < len(head) or len(head) != end:  # something changed: after it, no reasoning state
        if any(m.reasoning is not None and m.reasoning.without_reasoning() is not m.reasoning
               for m in head[unchanged:]):
            return ("an earlier turn is sent with its reasoning state after a change before it; providers bind "
                    "reasoning state to what came before it (leave it out after the first change)")
    return None


def check_history(original: Sequence[Message], sent: Sequence[Message]) -> str | None:
    """What is wrong with sending `sent` for the history `original`, in one sentence; None if nothing.

    Checks the invariants above, the whole of both lists (the loop checks a strategy's Plan in the time
    of its head alone: `CompactedRequests`)."""
    original, sent = list(original), list(sent)
    broken = pairing_problem(sent)
    if broken is not None:
        return broken[1]
    request = max((i for i, m in enumerate(original) if m.role == "user"), default=None)
    if request is None:
        return None if len(sent) == len(original) and all(map(_same, sent, original)) else \
            "a history without a user message is sent as it is (nothing before the model's turn may go)"
    current = original[request:]
    if len(sent) < len(current) or not all(map(_same, sent[len(sent) - len(current):], current)):
        if not any(_same(m, original[request]) for m in sent):
            return "the current request is missing from what is sent"
        return "the current turn (the request and every round since it) is not sent whole, as it is"
    earlier = original[:request]
    return head_problem(sent[:len(sent) - len(current)], earlier, [m for m in earlier if m.role == "system"])


def strategy_name(hook: Any) -> str:
    return getattr(hook, "name", None) or getattr(hook, "__name__", None) or type(hook).__name__


class CompactionError(ValueError):
    """A compaction hook returned a history that breaks an invariant (see check_history)."""


# -- the index: each message measured once -----------------------------------------------------------------

class HistoryIndex:
    """What compaction needs to know of a history, kept up to date one appended message at a time.

        index = HistoryIndex(messages)      # measures every message once
        index.add(message)                  # ... then only the new ones
        index.request                       # where the current turn starts (the last user message)
        index.size_before(i)                # characters of messages[:i]

    The loop keeps one per run (and hands it to the Thread, so the next run starts from it instead of
    measuring the thread again); a strategy used on its own builds one from the list it is given.
    """

    __slots__ = ("sizes", "answers", "users", "systems", "tools", "length", "first", "last")

    def __init__(self, messages: Sequence[Message] = ()):
        sizes, answers, users, systems, tools = [0], [0], [], [], []  # cumulative: characters, model answers
        total = count = 0
        for i, m in enumerate(messages):  # one pass, the whole history (a Thread's first run): kept lean
            role = m.role
            total += len(m.content or "") if not m.tool_calls else message_size(m)
            sizes.append(total)
            if role == "assistant":
                count += 1
            elif role == "user":
                users.append(i)
            elif role == "tool":
                tools.append(i)
            else:
                systems.append(i)
            answers.append(count)
        self.sizes, self.answers = array("q", sizes), array("q", answers)
        # positions of each role's messages; arrays, so that a run's copy is a memcpy, not 10,000 increfs
        self.users, self.systems, self.tools = array("q", users), array("q", systems), array("q", tools)
        self.length = len(sizes) - 1
        self.first, self.last = (messages[0], messages[-1]) if self.length else (None, None)

    def add(self, message: Message) -> None:
        """Measure one appended message (the loop's hot path: two appends and a comparison or two)."""
        i, role, sizes, answers = self.length, message.role, self.sizes, self.answers
        sizes.append(sizes[-1] + (len(message.content or "") if not message.tool_calls else message_size(message)))
        answers.append(answers[-1] + (role == "assistant"))
        if role == "user":
            self.users.append(i)
        elif role == "tool":
            self.tools.append(i)
        elif role == "system":
            self.systems.append(i)
        if i == 0:
            self.first = message
        self.length, self.last = i + 1, message

    def copy(self) -> HistoryIndex:
        twin = HistoryIndex.__new__(HistoryIndex)
        twin.sizes, twin.answers = array("q", self.sizes), array("q", self.answers)
        twin.users, twin.systems = array("q", self.users), array("q", self.systems)
        twin.tools = array("q", self.tools)
        twin.length, twin.first, twin.last = self.length, self.first, self.last
        return twin

    def describes(self, messages: Sequence[Message]) -> bool:
        """Is this the index of `messages` (same length, same first and last message)?"""
        n = self.length
        return len(messages) == n and (n == 0 or (messages[0] is self.first and messages[-1] is self.last))

    @classmethod
    def continuing(cls, messages: Sequence[Message], earlier: HistoryIndex | None) -> HistoryIndex:
        """The index of `messages`, from `earlier` (an index of a prefix of them, e.g. the Thread's) when it
        still describes that prefix, measuring only the rest; else from scratch."""
        n = earlier.length if earlier is not None else -1
        if earlier is None or len(messages) < n or (n and not (messages[0] is earlier.first
                                                               and messages[n - 1] is earlier.last)):
            return cls(messages)
        index = earlier.copy()
        for m in messages[n:]:
            index.add(m)
        return index

    @property
    def total(self) -> int:
        return self.sizes[-1]

    @property
    def request(self) -> int | None:
        """Where the current turn starts: the position of the last user message (None: there is none)."""
        return self.users[-1] if self.users else None

    def size_before(self, i: int) -> int:
        return self.sizes[i]

    def answers_between(self, start: int, end: int) -> int:
        """How many assistant messages (model answers: rounds) messages[start:end] hold."""
        return self.answers[end] - self.answers[start]


class Plan(NamedTuple):
    """What a strategy sends: `head` in place of messages[:keep_from], then messages[keep_from:] as they are.
    `keep_from` is where the current turn starts; a strategy returns the same Plan object for every request
    of a tool cycle, so the loop checks it once."""

    head: tuple[Message, ...]
    keep_from: int


def materialize(plan: Plan | None, messages: list[Message]) -> list[Message]:
    return messages if plan is None else [*plan.head, *messages[plan.keep_from:]]


def compact_request(hook: Compactor, messages: list[Message], trace: Any, step: int) -> list[Message]:
    """Ask a plain hook what to send for `messages`, check all of it, and record the compaction in the trace."""
    given = list(messages)
    sent = hook(given)
    if sent is None or sent is given or (len(sent) == len(given) and all(a is b for a, b in zip(sent, given))):
        return messages  # nothing compacted
    sent = list(sent)
    if not all(isinstance(m, Message) for m in sent):
        raise CompactionError(f"compact hook {strategy_name(hook)!r} returned something other than Messages")
    problem = check_history(messages, sent)
    if problem is not None:
        raise CompactionError(f"compact hook {strategy_name(hook)!r}: {problem}")
    trace.record("compact", step=step, strategy=strategy_name(hook), messages_before=len(messages),
                 messages_after=len(sent), chars_before=message_chars(messages), chars_after=message_chars(sent))
    return sent


class CompactedRequests:
    """The loop's side of a `compact=` hook: what each model call is sent, checked, kept up to date.

    A strategy with `plan(messages, index)` (the kit's) is asked for a Plan; a new plan is checked (its head
    only: the current turn is the loop's own history, valid by construction) and the request built once;
    the same plan again extends the request by the messages appended since. A strategy with `checkpoint()`
    has its state saved in `Run.compaction` (what a resumed run needs to send the same requests). A plain
    function is called with a copy of the history and its answer checked whole."""

    def __init__(self, hook: Any):
        self.hook = hook
        self.name = strategy_name(hook)
        self.planner = getattr(hook, "plan", None)
        self.plan: Plan | None = None
        self.sent: list[Message] = []
        self.upto = 0  # how much of the history `sent` holds
        self.head_chars = 0

    def request(self, run: Any, index: HistoryIndex) -> list[Message]:
        messages, trace, step = run.messages, run.trace, run.steps
        if self.planner is None:
            return compact_request(self.hook, messages, trace, step)
        plan = self.planner(messages, index)
        if plan is None:
            self.plan = None
            return messages
        if plan is not self.plan:
            self._check(plan, messages, index)
            self.plan, self.sent, self.upto = plan, [*plan.head, *messages[plan.keep_from:]], len(messages)
            self.head_chars = message_chars(plan.head)
            checkpoint = getattr(self.hook, "checkpoint", None)
            if checkpoint is not None:
                run.compaction = checkpoint()
        elif self.upto < len(messages):
            self.sent.extend(messages[self.upto:])
            self.upto = len(messages)
        trace.record("compact", step=step, strategy=self.name, messages_before=len(messages),
                     messages_after=len(self.sent), chars_before=index.total,
                     chars_after=self.head_chars + index.total - index.size_before(plan.keep_from))
        return self.sent

    def _check(self, plan: Any, messages: list[Message], index: HistoryIndex) -> None:
        if not isinstance(plan, Plan) or not all(isinstance(m, Message) for m in plan.head):
            raise CompactionError(f"compact hook {self.name!r}: plan() returned something other than a Plan "
                                  "of Messages")
        if plan.keep_from != index.request:
            raise CompactionError(f"compact hook {self.name!r}: the current turn (the request and every round "
                                  "since it) is not sent whole, as it is")
        problem = head_problem(plan.head, messages, [messages[i] for i in index.systems if i < plan.keep_from],
                               plan.keep_from)
        if problem is not None:
            raise CompactionError(f"compact hook {self.name!r}: {problem}")
