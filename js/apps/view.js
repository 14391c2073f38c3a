// The view side of every MCP App document mcp_notebook serves: the official view SDK
// (`App`) speaks ui/initialize, initialized, size changes, host context and the tool
// input/result notifications; this glue shows what the kernel rendered.
import {
  App,
  applyDocumentTheme,
  applyHostFonts,
  applyHostStyleVariables,
} from "@modelcontextprotocol/ext-apps/app-with-deps";

const RESULT_VIEW_KEY = "mcp-notebook/view";

function readConfig() {
  const tag = document.getElementById("mcp-notebook-config");
  return tag ? JSON.parse(tag.textContent) : {};
}

// Scripts set through innerHTML do not run: replace each by a live copy, in order.
function runScripts(root) {
  for (const old of root.querySelectorAll("script")) {
    const type = (old.getAttribute("type") || "").trim();
    if (type && !/^(text|application)\/(javascript|ecmascript)$|^module$/.test(type)) continue;
    const live = document.createElement("script");
    for (const { name, value } of old.attributes) live.setAttribute(name, value);
    live.textContent = old.textContent;
    old.replaceWith(live);
  }
}

const config = readConfig();
const root = document.getElementById("mcp-notebook-view");
const state = { input: null, result: null, context: {}, results: 0 };
const app = new App(
  { name: "mcp-notebook view", version: config.version || "0" },
  {},
  { autoResize: true },
);

function emit(name, detail) {
  document.dispatchEvent(new CustomEvent(`mcp-notebook:${name}`, { detail }));
}

function applyContext(context) {
  if (!context) return;
  state.context = { ...state.context, ...context };
  if (context.theme) applyDocumentTheme(context.theme);
  if (context.styles?.variables) applyHostStyleVariables(context.styles.variables);
  if (context.styles?.css?.fonts) applyHostFonts(context.styles.css.fonts);
}

async function show(view) {
  const widgets = window.mcpNotebookWidgets;
  if (typeof view.html === "string") {
    root.innerHTML = view.html;
    runScripts(root);
    if (widgets) await widgets.render(root, api);
  } else if (view.widgets && widgets) {
    await widgets.update(view.widgets);
  }
}

// What the page's own scripts (and the widget manager) use.
const api = {
  app,
  config,
  state,
  show,
  async callTool(name, args) {
    const result = await app.callServerTool({
      name,
      arguments: args,
      _meta: { [RESULT_VIEW_KEY]: { from: config.view } },
    });
    const view = result?._meta?.[RESULT_VIEW_KEY];
    if (view && !result.isError) await show(view);
    emit("call-result", { name, result });
    return result;
  },
};
window.mcpNotebook = api;

// Handlers first: the host may send tool-input right after initialization.
app.ontoolinput = (params) => {
  state.input = params.arguments ?? {};
  emit("tool-input", params);
};
app.ontoolresult = async (result) => {
  state.result = result;
  state.results += 1;
  const view = result?._meta?.[RESULT_VIEW_KEY];
  if (view && !result.isError) await show(view);
  document.documentElement.dataset.mcpNotebookResults = String(state.results);
  emit("tool-result", result);
};
app.ontoolcancelled = (params) => emit("tool-cancelled", params);
app.onhostcontextchanged = applyContext;
app.onteardown = async () => ({});

async function start() {
  if (window.mcpNotebookWidgets) await window.mcpNotebookWidgets.render(root, api);
  await app.connect();
  applyContext(app.getHostContext());
  document.documentElement.dataset.mcpNotebook = "connected";
  emit("connected", app.getHostContext());
}

start().catch((error) => {
  document.documentElement.dataset.mcpNotebook = "failed";
  console.error("mcp-notebook view:", error);
});
