// A form typed from a JSON Schema: an object's string, number, integer, boolean and enum
// properties get inputs of their own, its other properties a JSON field each, and a schema
// that is not an object one JSON text area; `value()` reads it back as JSON.

import { h, pretty } from "./dom.js";

/** A form for `schema` (may be null: then a JSON text area), prefilled with `initial`. */
export function schemaForm(schema, initial) {
  const props = schema && schema.type === "object" && schema.properties;
  if (!props || !Object.keys(props).length) return jsonArea(initial ?? (schema && schema.type === "object" ? {} : null));
  const inputs = new Map();
  const root = h("div.form");
  for (const [name, prop] of Object.entries(props)) {
    const required = (schema.required || []).includes(name);
    const start = initial && name in initial ? initial[name] : prop.default;
    const input = inputFor(name, prop, start);
    inputs.set(name, [prop, input]);
    root.append(h("label", { for: "f-" + name }, name, required ? " *" : "",
      prop.description ? h("span.muted", {}, " — " + prop.description) : null), input);
  }
  root.value = () => {
    const out = {};
    for (const [name, [prop, input]] of inputs) {
      const v = readInput(prop, input);
      if (v !== undefined) out[name] = v;
    }
    return out;
  };
  return root;
}

function types(prop) {
  const t = prop.type;
  return Array.isArray(t) ? t.filter((x) => x !== "null") : t ? [t] : [];
}

function isSimple(prop) {
  if (prop.enum) return true;
  const t = types(prop);
  return t.length === 1 && ["string", "number", "integer", "boolean"].includes(t[0]);
}

function inputFor(name, prop, start) {
  const id = "f-" + name;
  if (!isSimple(prop)) {
    return h("input.mono", { id, name, placeholder: "JSON", value: start === undefined ? "" : JSON.stringify(start) });
  }
  if (prop.enum) {
    return h("select", { id, name }, h("option", { value: "" }, "—"),
      prop.enum.map((v) => h("option", { value: JSON.stringify(v), selected: JSON.stringify(v) === JSON.stringify(start) }, String(v))));
  }
  const t = types(prop)[0];
  if (t === "boolean") return h("input", { id, name, type: "checkbox", checked: !!start });
  return h("input", { id, name, type: t === "string" ? "text" : "number", step: t === "integer" ? 1 : "any",
    value: start === undefined || start === null ? "" : String(start) });
}

function readInput(prop, input) {
  if (!isSimple(prop)) {
    if (input.value.trim() === "") return undefined;
    try { return JSON.parse(input.value); } catch (e) { throw new Error(`${input.name}: the JSON does not parse: ${e.message}`); }
  }
  if (prop.enum) return input.value === "" ? undefined : JSON.parse(input.value);
  const t = types(prop)[0];
  if (t === "boolean") return input.checked;
  if (input.value === "") return undefined;
  return t === "string" ? input.value : Number(input.value);
}

/** A JSON text area whose `value()` parses it (throwing a message naming the position). */
export function jsonArea(initial, rows = 6) {
  const area = h("textarea", { rows, spellcheck: "false" });
  area.value = initial === undefined ? "" : pretty(initial);
  const wrap = h("div", {}, area);
  wrap.value = () => {
    const text = area.value.trim();
    if (!text) return null;
    try { return JSON.parse(text); } catch (e) { throw new Error("The JSON does not parse: " + e.message); }
  };
  wrap.area = area;
  return wrap;
}
