#!/usr/bin/env python3
"""LangGraph's side of bench/retention.sh: the same chat thread as weir's
``examples/retention.rs chat`` (one node appending the assistant's reply to a growing
``messages`` list, one ``invoke`` per turn with the user's message) on ``SqliteSaver``, which has
no retention: prints the file's size, the checkpoints stored and the time per turn every EVERY
turns, as ``turn,bytes_on_disk,checkpoints,us_per_turn``.

Usage: retention_langgraph.py DB [TURNS] [EVERY]

Its storage grows with the square of the turns (every checkpoint stores the whole list), so
bench/retention.sh runs it for fewer turns than weir (2,000 by default: about 1 GB).
"""

from __future__ import annotations

import operator
import os
import sqlite3
import sys
import time
from typing import Annotated, TypedDict

from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import END, START, StateGraph


class Chat(TypedDict):
    messages: Annotated[list[str], operator.add]
    turns: int


def reply(state: Chat) -> dict:
    last = len(state["messages"][-1]) if state["messages"] else 0
    turns = state.get("turns", 0)
    text = (
        f"assistant {turns}: {'ok ' * 30} (the fake model's answer to {last} bytes, padded to a "
        f"typical reply length {'·' * 40})"
    )
    return {"messages": [text], "turns": turns + 1}


def bytes_on_disk(db: str) -> int:
    return sum(os.path.getsize(p) for p in (db, db + "-wal") if os.path.exists(p))


def main() -> None:
    db = sys.argv[1]
    turns = int(sys.argv[2]) if len(sys.argv) > 2 else 10_000
    every = int(sys.argv[3]) if len(sys.argv) > 3 else 1000
    for p in (db, db + "-wal", db + "-shm"):
        if os.path.exists(p):
            os.remove(p)
    conn = sqlite3.connect(db, check_same_thread=False)
    saver = SqliteSaver(conn)
    g = StateGraph(Chat)
    g.add_node("reply", reply)
    g.add_edge(START, "reply")
    g.add_edge("reply", END)
    app = g.compile(checkpointer=saver)
    config = {"configurable": {"thread_id": "chat"}}
    print("turn,bytes_on_disk,checkpoints,us_per_turn")
    started = time.perf_counter()
    for turn in range(1, turns + 1):
        app.invoke({"messages": [f"user {turn}: {'question ' * 8}"]}, config)
        if turn % every == 0 or turn == 100:
            per = 100 if turn == 100 else every
            us = (time.perf_counter() - started) * 1e6 / per
            n = conn.execute("SELECT COUNT(*) FROM checkpoints").fetchone()[0]
            print(f"{turn},{bytes_on_disk(db)},{n},{us:.0f}", flush=True)
            started = time.perf_counter()
    state = app.get_state(config).values
    assert len(state["messages"]) == 2 * turns


if __name__ == "__main__":
    main()
