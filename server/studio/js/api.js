// The server's own LangGraph API, as the studio calls it: JSON requests, and runs streamed as
// server-sent events read from a POST (EventSource only does GET).

/** An error the API answered, with its `detail`. */
export class ApiError extends Error {
  constructor(status, detail) {
    super(`${status}: ${typeof detail === "string" ? detail : JSON.stringify(detail)}`);
    this.status = status;
    this.detail = detail;
  }
}

/** Calls the API: `body` is sent as JSON; the answer is parsed JSON (or null for 204). */
export async function call(method, path, body) {
  const res = await fetch(path, {
    method,
    headers: body === undefined ? {} : { "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  const data = text ? JSON.parse(text) : null;
  if (!res.ok) throw new ApiError(res.status, data && data.detail !== undefined ? data.detail : data);
  return data;
}

export const get = (path) => call("GET", path);
export const post = (path, body) => call("POST", path, body ?? {});

/**
 * Streams a run: POSTs `body` to `path` and calls `onEvent(event, data)` for every SSE frame
 * until the stream ends. Resolves with the run id from the `metadata` frame.
 */
export async function stream(path, body, onEvent, signal) {
  const res = await fetch(path, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "text/event-stream" },
    body: JSON.stringify(body),
    signal,
  });
  if (!res.ok) {
    const text = await res.text();
    let detail = text;
    try { detail = JSON.parse(text).detail; } catch { /* plain text */ }
    throw new ApiError(res.status, detail);
  }
  const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  let runId = null;
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    // The server frames with CRLF, as LangGraph's does; SSE allows CR, LF or both. A CR that
    // ends a chunk waits for the next one, which may start with its LF.
    buffer = (buffer + value).replace(/\r\n?(?=[^]|$)/g, (m, at, all) => (m === "\r" && at === all.length - 1 ? "\r" : "\n"));
    let end;
    while ((end = buffer.indexOf("\n\n")) >= 0) {
      const frame = parseFrame(buffer.slice(0, end));
      buffer = buffer.slice(end + 2);
      if (!frame) continue;
      if (frame.event === "metadata" && frame.data && frame.data.run_id) runId = frame.data.run_id;
      onEvent(frame.event, frame.data);
    }
  }
  return runId;
}

/** One SSE frame's event name and parsed data, or null for a comment (a heartbeat). */
export function parseFrame(text) {
  let event = "message";
  const data = [];
  for (const line of text.split("\n")) {
    if (line.startsWith("event:")) event = line.slice(6).trim();
    else if (line.startsWith("data:")) data.push(line.slice(5).replace(/^ /, ""));
  }
  if (!data.length) return null;
  const joined = data.join("\n");
  try { return { event, data: JSON.parse(joined) }; } catch { return { event, data: joined }; }
}
