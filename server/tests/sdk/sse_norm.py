"""Reads raw SSE captures and compares streamed events with them, ignoring what differs from
run to run: ids (UUIDs, 32-hex interrupt ids, `<ms>-<seq>` event ids), timestamps, and the
`metadata`/`configurable` bags where LangGraph records its own versions and request ids.

Two comparisons:
- `exact`: event names in order, and data equal after `scrub` (ids and timestamps replaced);
- `skeleton`: event names in order, and data of the same shape (the same keys, recursively; a
  list's element shapes as a set; `null` matches any shape, since a value that is `null` on a
  fresh thread is an object on a used one).
"""

import json
import pathlib
import re

CAPTURES = pathlib.Path(__file__).parent / "captures"
UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
HEX32 = re.compile(r"^[0-9a-f]{32}$")
TIMESTAMP = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(\+00:00|Z)$")
OPAQUE = {"metadata", "configurable"}


def parse(text: str) -> list[tuple[str, object, str | None]]:
    """The events of an SSE body as `(event, data, id)`; comments and other fields are skipped."""
    events, fields = [], {}
    for line in text.replace("\r\n", "\n").split("\n"):
        if line == "":
            if "event" in fields or "data" in fields:
                data = fields.get("data")
                events.append((fields.get("event", "message"), json.loads(data) if data else None, fields.get("id")))
            fields = {}
        elif line.startswith(":"):
            continue
        elif ":" in line:
            key, _, value = line.partition(":")
            value = value[1:] if value.startswith(" ") else value
            fields[key] = fields[key] + "\n" + value if key == "data" and key in fields else value
    return events


def capture(name: str) -> list[tuple[str, object]]:
    """The `(event, data)` pairs of `captures/raw_<name>.sse` (an HTTP head, if any, skipped)."""
    text = (CAPTURES / f"raw_{name}.sse").read_text()
    if text.startswith("HTTP/"):
        text = text.replace("\r\n", "\n").split("\n\n", 1)[1]
    return [(e, d) for e, d, _ in parse(text)]


def scrub(value):
    """`value` with ids and timestamps replaced by placeholders, and namespaces' task ids too."""
    if isinstance(value, dict):
        return {k: ("<opaque>" if k in OPAQUE else scrub(v)) for k, v in value.items()}
    if isinstance(value, list):
        return [scrub(v) for v in value]
    if isinstance(value, str):
        if HEX32.match(value):
            return "<hex>"
        if TIMESTAMP.match(value):
            return "<ts>"
        return UUID.sub("<uuid>", value)
    return value


def scrub_event(name: str) -> str:
    """An event name with the task ids of its namespace replaced (`updates|inner:<uuid>`)."""
    return UUID.sub("<uuid>", name)


def skeleton(value):
    """The shape of `value`: keys recursively, scalars by type, a list's shapes as a sorted set."""
    if isinstance(value, dict):
        return {k: ("*" if k in OPAQUE else skeleton(v)) for k, v in value.items()}
    if isinstance(value, list):
        shapes = {json.dumps(skeleton(v), sort_keys=True) for v in value}
        return ["list", sorted(shapes)]
    if value is None:
        return None
    return type(value).__name__


def same_shape(expected, got, path="data") -> list[str]:
    """Where `got` differs in shape from `expected` (both skeletons); empty when they match."""
    if expected is None or got is None or expected == "*" or got == "*":
        return []
    if isinstance(expected, dict) and isinstance(got, dict):
        diffs = [f"{path}.{k}: missing" for k in expected if k not in got]
        diffs += [f"{path}.{k}: unexpected" for k in got if k not in expected]
        for k in expected:
            if k in got:
                diffs += same_shape(expected[k], got[k], f"{path}.{k}")
        return diffs
    if isinstance(expected, list) and isinstance(got, list):
        exp = [json.loads(s) for s in expected[1]]
        out = [json.loads(s) for s in got[1]]
        if not exp or not out:
            return []
        diffs = []
        for o in out:
            if all(same_shape(e, o, path + "[]") for e in exp):
                diffs.append(f"{path}[]: no expected element has the shape {json.dumps(o)}")
        return diffs
    if expected != got:
        return [f"{path}: expected {expected}, got {got}"]
    return []


def diff_exact(expected, got) -> list[str]:
    """The differences between two event lists, compared by name and scrubbed data."""
    exp = [(scrub_event(e), scrub(d)) for e, d in expected]
    out = [(scrub_event(e), scrub(d)) for e, d in got]
    if exp == out:
        return []
    return [f"expected {json.dumps(exp)}", f"got      {json.dumps(out)}"]


def diff_skeleton(expected, got) -> list[str]:
    """The differences between two event lists, compared by name and data shape."""
    names_e = [scrub_event(e) for e, _ in expected]
    names_g = [scrub_event(e) for e, _ in got]
    if names_e != names_g:
        return [f"event names: expected {names_e}, got {names_g}"]
    diffs = []
    for i, ((name, e), (_, g)) in enumerate(zip(expected, got)):
        diffs += [f"event {i} ({name}): {d}" for d in same_shape(skeleton(e), skeleton(g))]
    return diffs
