// Building DOM nodes without a framework: h("div.panel", {onclick}, child, "text", …).

/** An element: `tag` may carry classes (`div.panel.wide`); `props` sets attributes, `on*` listeners. */
export function h(tag, props, ...children) {
  const [name, ...classes] = tag.split(".");
  const el = document.createElement(name);
  if (classes.length) el.className = classes.join(" ");
  for (const [key, value] of Object.entries(props || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key.startsWith("on")) el.addEventListener(key.slice(2), value);
    else if (key === "value") el.value = value;
    else el.setAttribute(key, value === true ? "" : value);
  }
  append(el, children);
  return el;
}

/** Appends children (nodes, strings, arrays of them; null and false are skipped). */
export function append(el, children) {
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : String(child));
  }
  return el;
}

/** Replaces the children of `el`. */
export function fill(el, ...children) {
  el.replaceChildren();
  return append(el, children);
}

/** JSON shown to a person: two-space indented. */
export const pretty = (value) => JSON.stringify(value, null, 2);

/** A status badge. */
export const badge = (text) => h("span.badge." + String(text).replace(/[^a-z_]/gi, ""), {}, text);

/** A date shown short, in the reader's time zone. */
export function when(iso) {
  if (!iso) return "";
  const d = new Date(iso);
  return isNaN(d) ? iso : d.toLocaleString();
}

/** Sets the header's status line. */
export function status(text) {
  document.getElementById("status").textContent = text || "";
}
