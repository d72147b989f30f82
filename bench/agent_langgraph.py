"""The agent benchmark on LangGraph (bench/agent.sh runs it next to weir's
agent/examples/agent_bench.rs, with the same workload and the same JSON line out).

A `create_react_agent` with a chat model from langchain-core that answers instantly (a
`GenericFakeChatModel` answering by the conversation's last message) and two trivial tools.

- turn: one `invoke` on one thread kept by an `InMemorySaver`: the human message, the model
  calling both tools, the tools, the model's answer (3 steps, 5 messages). Timed over --turns
  turns after 10 unmeasured ones; the conversation grows as in a real chat.
- fresh turn: CPU time per turn of 10 x --turns new conversations without a checkpointer (the fixed cost
  of a turn).
- memory: the resident memory a thread adds once it holds --messages messages (its checkpoints
  included), averaged over --threads threads.
"""

import argparse
import gc
import json
import os
import statistics
import time

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
import warnings

warnings.filterwarnings("ignore", message=".*create_react_agent.*")
from langgraph.prebuilt import create_react_agent  # noqa: E402


@tool
def add(a: int, b: int) -> int:
    """Adds two integers."""
    return a + b


@tool
def echo(text: str) -> str:
    """Repeats the text."""
    return text


class InstantModel(GenericFakeChatModel):
    """Answers instantly: after a human message it calls both tools, after the tools' answers it
    answers in words. A fresh message each time, without an id, as weir's."""

    messages: object = None

    def bind_tools(self, tools, **kwargs):
        return self

    def _generate(self, messages, stop=None, run_manager=None, **kwargs):
        from langchain_core.outputs import ChatGeneration, ChatResult

        if isinstance(messages[-1], ToolMessage):
            msg = AIMessage(content="3, and hello.")
        else:
            msg = AIMessage(
                content="",
                tool_calls=[
                    {"id": "call_add", "name": "add", "args": {"a": 1, "b": 2}},
                    {"id": "call_echo", "name": "echo", "args": {"text": "hello"}},
                ],
            )
        return ChatResult(generations=[ChatGeneration(message=msg)])


def agent():
    return create_react_agent(InstantModel(), [add, echo], checkpointer=InMemorySaver())


def turn(app, thread):
    cfg = {"configurable": {"thread_id": thread}}
    out = app.invoke({"messages": [HumanMessage("add 1 and 2, and echo hello")]}, cfg)
    return len(out["messages"])


def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--turns", type=int, default=100)
    p.add_argument("--threads", type=int, default=5)
    p.add_argument("--messages", type=int, default=1000)
    a = p.parse_args()

    app = agent()
    for _ in range(10):
        turn(app, "warm-up")
    times = []
    n = 0
    cpu = time.process_time_ns()
    for _ in range(a.turns):
        t = time.perf_counter()
        n = turn(app, "turns")
        times.append((time.perf_counter() - t) * 1e6)
    cpu_us = (time.process_time_ns() - cpu) / 1e3 / a.turns
    assert n == 5 * a.turns, n

    plain = create_react_agent(InstantModel(), [add, echo])
    fresh = {"messages": [HumanMessage("add 1 and 2, and echo hello")]}
    for _ in range(10):
        plain.invoke(fresh)
    cpu, wall = time.process_time_ns(), time.perf_counter()
    for _ in range(10 * a.turns):
        assert len(plain.invoke(fresh)["messages"]) == 5
    fresh_cpu_us = (time.process_time_ns() - cpu) / 1e3 / (10 * a.turns)
    fresh_wall_us = (time.perf_counter() - wall) * 1e6 / (10 * a.turns)

    mem_app = agent()
    gc.collect()
    before = rss()
    for t in range(a.threads):
        n = 0
        while n < a.messages:
            n = turn(mem_app, f"memory-{t}")
    gc.collect()
    per_thread = (rss() - before) / a.threads / (1024 * 1024)
    print(json.dumps({
        "impl": "langgraph", "turns": a.turns, "turn_us_median": statistics.median(times),
        "turn_us_mean": statistics.fmean(times), "turn_cpu_us": cpu_us, "fresh_turn_cpu_us": fresh_cpu_us, "fresh_turn_us_mean": fresh_wall_us, "threads": a.threads, "messages": a.messages,
        "mib_per_thread": per_thread,
    }))


if __name__ == "__main__":
    main()
