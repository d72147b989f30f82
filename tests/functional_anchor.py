"""The functional API scenarios of tests/functional.rs, run on LangGraph itself.

    python3 -m venv bench/.venv && bench/.venv/bin/pip install langgraph==1.2.9
    bench/.venv/bin/python tests/functional_anchor.py > tests/functional_anchor.txt

Each scenario prints what LangGraph returned beside what weir's test asserts, and SAME or
DIFFERS; a difference weir makes on purpose says why. Task bodies are trivial and deterministic;
side effects are counted, as the Rust tests count them.
"""

import json
import threading

from langgraph.checkpoint.memory import InMemorySaver
from langgraph.func import entrypoint, task
from langgraph.types import Command, RetryPolicy, interrupt

results = []


def report(scenario, langgraph, weir, why=""):
    same = langgraph == weir
    results.append(same or bool(why))
    line = {"scenario": scenario, "langgraph": langgraph, "weir": weir, "verdict": "SAME" if same else "DIFFERS"}
    if why and not same:
        line["why"] = why
    print(json.dumps(line))


def cfg(thread):
    return {"configurable": {"thread_id": thread}}


# ---- parallel calls return in call order --------------------------------------------------------
barrier = threading.Barrier(3, timeout=30)


@task
def square_together(n: int) -> int:
    barrier.wait()
    return n * n


@entrypoint()
def fan_out(n: int) -> list:
    futures = [square_together(i) for i in range(1, n + 1)]
    return [f.result() for f in futures]


report("parallel calls", fan_out.invoke(3), [1, 4, 9])

# ---- resume after an interrupt: finished tasks return saved results -----------------------------
counts = {"draft": 0, "polish": 0, "before": 0, "ask": 0, "flaky": 0}


@task
def draft_of(topic: str) -> str:
    counts["draft"] += 1
    return f"draft on {topic}"


@task
def polish(text: str, note: str) -> str:
    counts["polish"] += 1
    return f"{text} ({note})"


@entrypoint(checkpointer=InMemorySaver())
def review(topic: str) -> str:
    draft = draft_of(topic).result()
    note = interrupt({"review": draft})
    return polish(draft, note).result()


c = cfg("review-1")
first = review.invoke("rust", c)
question = first["__interrupt__"][0].value
report("interrupt question", question, {"review": "draft on rust"})
out = review.invoke(Command(resume="lgtm"), c)
report("resumed output", out, "draft on rust (lgtm)")
report("draft runs after resume", counts["draft"], 1)
report("state after resume", review.get_state(c).values, "draft on rust (lgtm)",
       "weir's state is {input, output, previous}: the output is `values.output`")

# ---- an interrupt inside a task -----------------------------------------------------------------


@task
def count_before(n: int) -> int:
    counts["before"] += 1
    return n + 1


@task
def ask_human(question: str) -> bool:
    counts["ask"] += 1
    return interrupt(question)


@entrypoint(checkpointer=InMemorySaver())
def approve(n: int) -> str:
    m = count_before(n).result()
    yes = ask_human(f"approve {m}?").result()
    return f"{m}: {'true' if yes else 'false'}"


c = cfg("approve-1")
first = approve.invoke(1, c)
report("task interrupt question", first["__interrupt__"][0].value, "approve 2?")
report("task interrupt output", approve.invoke(Command(resume=True), c), "2: true")
report("task interrupt runs (before, ask)", [counts["before"], counts["ask"]], [1, 2])

# ---- a call that differs from the saved call at its position -------------------------------------
generation = {"g": 0}


@task
def add_one(n: int) -> int:
    return n + 1


@task
def sub_one(n: int) -> int:
    return n - 1


@entrypoint(checkpointer=InMemorySaver())
def drifting(swap_task: bool) -> int:
    g = generation["g"]
    a = sub_one(10).result() if swap_task and g > 0 else add_one(10 + g).result()
    interrupt("go on?")
    return a


drifting.invoke(False, cfg("drift-args"))
drifting.invoke(True, cfg("drift-task"))
generation["g"] = 1
report("other arguments at a saved position", drifting.invoke(Command(resume=True), cfg("drift-args")),
       "error: task `add_one` at position 0 was called with other arguments",
       "LangGraph replays the saved result silently; weir fails, naming the task and the position")
report("another task at a saved position", drifting.invoke(Command(resume=True), cfg("drift-task")),
       "error: task `sub_one` was called at position 0, where the saved run called task `add_one`",
       "LangGraph runs the other task (its task id hashes the name); weir fails, naming both")

# ---- previous and entrypoint.final --------------------------------------------------------------


@entrypoint(checkpointer=InMemorySaver())
def running_total(add: int, *, previous=None):
    total = (previous or 0) + add
    return entrypoint.final(value=f"{add} makes {total}", save=total)


outs = [running_total.invoke(2, cfg("total-1")), running_total.invoke(5, cfg("total-1")),
        running_total.invoke(1, cfg("total-2"))]
report("final and previous", outs, ["2 makes 2", "5 makes 7", "1 makes 1"])


@entrypoint(checkpointer=InMemorySaver())
def remember(word: str, *, previous=None):
    return (previous or []) + [word]


remember.invoke("a", cfg("words"))
report("previous is the last return", remember.invoke("b", cfg("words")), ["a", "b"])

# ---- streaming -----------------------------------------------------------------------------------
from langgraph.config import get_stream_writer  # noqa: E402


@task
def shout(word: str) -> str:
    get_stream_writer()({"shouting": word})
    return word.upper()


@entrypoint()
def loud(words: list) -> list:
    futures = [shout(w) for w in words]
    return [f.result() for f in futures]


updates, custom = [], []
for mode, chunk in loud.stream(["a", "b"], stream_mode=["updates", "custom"]):
    (updates if mode == "updates" else custom).append(chunk)
report("custom events", sorted(custom, key=json.dumps), [{"shouting": "a"}, {"shouting": "b"}])
report("updates", sorted(updates, key=json.dumps), [{"loud": ["A", "B"]}],
       "LangGraph streams each task's result as an update of its own; weir streams the entrypoint's")
report("default stream mode", loud.stream_mode, "updates")

# ---- retry ---------------------------------------------------------------------------------------


class NotYet(Exception):
    """LangGraph's default retry skips ValueError and its kin: a plain exception is retried."""


@task(retry_policy=RetryPolicy(max_attempts=3, initial_interval=0.001, jitter=False))
def flaky(n: int) -> int:
    counts["flaky"] += 1
    if counts["flaky"] < 3:
        raise NotYet("not yet")
    return n


@entrypoint()
def with_options(slow: bool) -> int:
    return flaky(7).result()


report("retry", [with_options.invoke(False), counts["flaky"]], [7, 3])

print(json.dumps({"all": "ok" if all(results) else "unexplained differences"}))
