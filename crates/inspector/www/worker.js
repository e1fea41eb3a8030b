// The inspector's worker: holds the wasm module and the captures, so that
// parsing a large trace never freezes the page. Messages in:
//   {id, op: "add", name, bytes}            -> {id, error}
//   {id, op: "call", method, args}          -> {id, result}  (JSON text parsed here)
import init, { Inspector } from "./pkg/inspector.js";

const ready = init();
let inspector = null;

self.onmessage = async (ev) => {
  const { id, op } = ev.data;
  try {
    await ready;
    if (!inspector) inspector = new Inspector();
    if (op === "add") {
      const t0 = performance.now();
      const error = inspector.add(ev.data.name, new Uint8Array(ev.data.bytes));
      self.postMessage({ id, error, ms: performance.now() - t0 });
    } else if (op === "call") {
      const t0 = performance.now();
      const text = inspector[ev.data.method](...(ev.data.args || []));
      self.postMessage({ id, result: JSON.parse(text), ms: performance.now() - t0 });
    } else {
      self.postMessage({ id, error: `unknown op ${op}` });
    }
  } catch (e) {
    self.postMessage({ id, error: String(e) });
  }
};
