// ipywidgets (and anywidgets: anywidget.js) in an MCP App view: the HTML manager brings embedded widget state to life
// (no kernel, no CDN); a control the user changes goes to the kernel as a call of the
// view's app-only `<name>.set` tool, through the host; the state it returns (after the
// kernel's observers ran) is applied to every model.
// htmlmanager alone: the package index pulls in libembed, whose schema validator compiles
// code with `new Function` at load, which the hosts' CSP (no unsafe-eval) forbids.
import { HTMLManager } from "@jupyter-widgets/html-manager/lib/htmlmanager";
import "@jupyter-widgets/controls/css/widgets-base.css";
import "@lumino/widgets/style/index.css";
import * as anywidget from "./anywidget.js";

const DEBOUNCE_MS = 120;
let manager = null;
let applying = 0;
const pending = new Map(); // model_id -> {changes, timer}
let queue = Promise.resolve();

function jsonable(value) {
  try {
    JSON.stringify(value);
    return true;
  } catch {
    return false;
  }
}

function watch(model, api) {
  // A custom message (a Button's click) has no comm here: it goes to the kernel too.
  model.send = (content) => {
    queue = queue
      .then(() => api.callTool(api.config.setTool, { model_id: model.model_id, message: content }))
      .catch((error) => console.error("mcp-notebook widgets:", error));
  };
  model.on("change", () => {
    if (applying) return;
    const changed = model.changedAttributes() || {};
    const entry = pending.get(model.model_id) || { changes: {}, timer: null };
    for (const [key, value] of Object.entries(changed)) {
      if (!key.startsWith("_") && jsonable(value)) entry.changes[key] = value;
    }
    if (!Object.keys(entry.changes).length) return;
    clearTimeout(entry.timer);
    entry.timer = setTimeout(() => send(model.model_id, api), DEBOUNCE_MS);
    pending.set(model.model_id, entry);
  });
}

function send(modelId, api) {
  const entry = pending.get(modelId);
  pending.delete(modelId);
  if (!entry || !api.config.setTool) return;
  // One call at a time, in order: the kernel sees the controls as the user moved them.
  queue = queue
    .then(() => api.callTool(api.config.setTool, { model_id: modelId, state: entry.changes }))
    .catch((error) => console.error("mcp-notebook widgets:", error));
}

async function update(managerState) {
  if (!manager) return;
  for (const [id, entry] of Object.entries(managerState.state || {})) {
    if (!manager.has_model(id)) continue;
    const model = await manager.get_model(id);
    const state = await model.constructor._deserialize_state(entry.state, manager);
    // A trait the user changed since (not sent yet) keeps the user's value: the kernel
    // hears it next, and answers with what follows from it.
    for (const key of Object.keys(pending.get(id)?.changes || {})) delete state[key];
    // Only what the kernel sent is "not the user's": the flag spans no await, so a
    // control moved meanwhile is still heard.
    applying += 1;
    try {
      model.set_state(state);
    } finally {
      applying -= 1;
    }
  }
}

// Widget modules beyond ipywidgets' own: only those bundled here (nothing is fetched).
function loader(moduleName, moduleVersion) {
  if (moduleName === "anywidget") return Promise.resolve(anywidget);
  return Promise.reject(new Error(`${moduleName}@${moduleVersion} is not bundled in the view`));
}

async function render(root, api) {
  const stateTag = root.querySelector('script[type="application/vnd.jupyter.widget-state+json"]');
  if (!stateTag) return;
  const managerState = JSON.parse(stateTag.textContent);
  if (!manager) {
    manager = new HTMLManager({ loader });
    const models = await manager.set_state(managerState);
    for (const model of models) watch(model, api);
  } else {
    await update(managerState);
  }
  for (const tag of root.querySelectorAll('script[type="application/vnd.jupyter.widget-view+json"]')) {
    const { model_id: modelId } = JSON.parse(tag.textContent);
    if (!manager.has_model(modelId)) continue;
    const model = await manager.get_model(modelId);
    const host = document.createElement("div");
    host.className = "widget-subarea";
    tag.replaceWith(host);
    await manager.display_view(await manager.create_view(model), host);
  }
  document.documentElement.dataset.mcpNotebookWidgets = "rendered";
}

window.mcpNotebookWidgets = { render, update };
