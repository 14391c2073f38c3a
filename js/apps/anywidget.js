// anywidget in an MCP App view: the widget models of module "anywidget" (AnyModel and
// AnyView), for the HTML manager to instantiate from the embedded state.
// anywidget's own front end imports the widget's `_esm` source from a Blob URL; the
// restrictive CSP hosts apply to a view that declares no origin (script-src 'self'
// 'unsafe-inline') forbids that. So the source runs here as an inline module script, its
// exports rewritten (with a real parser, acorn) into assignments this page can read.
import { parse } from "acorn";
import { DOMWidgetModel, DOMWidgetView } from "@jupyter-widgets/base";

const EXPORTS = "__mcpNotebookExports";
const pending = new Map(); // key -> {resolve, reject}
const loaded = new Map(); // _esm source -> Promise of the widget definition
let serial = 0;

// The names a declaration binds (`const {a, b: [c]} = ...` binds a and c).
function boundNames(pattern, names = []) {
  if (!pattern) return names;
  switch (pattern.type) {
    case "Identifier":
      names.push(pattern.name);
      break;
    case "ObjectPattern":
      for (const p of pattern.properties) boundNames(p.type === "RestElement" ? p.argument : p.value, names);
      break;
    case "ArrayPattern":
      for (const p of pattern.elements) boundNames(p, names);
      break;
    case "RestElement":
      boundNames(pattern.argument, names);
      break;
    case "AssignmentPattern":
      boundNames(pattern.left, names);
      break;
  }
  return names;
}

function exportName(node) {
  return node.type === "Literal" ? String(node.value) : node.name;
}

// The module with each top-level `export` turned into a plain declaration plus an
// assignment to EXPORTS, and a last line handing EXPORTS to `key`'s loader.
export function rewrite(source, key) {
  const ast = parse(source, { ecmaVersion: "latest", sourceType: "module" });
  const edits = []; // [start, end, text], applied from the end
  const assigned = [];
  for (const node of ast.body) {
    if (node.type === "ExportDefaultDeclaration") {
      const decl = node.declaration;
      const named = (decl.type === "FunctionDeclaration" || decl.type === "ClassDeclaration") && decl.id;
      if (named) {
        edits.push([node.start, decl.start, ""]);
        assigned.push(`${EXPORTS}.default = ${decl.id.name};`);
      } else {
        edits.push([node.start, decl.start, `${EXPORTS}.default = (`]);
        edits.push([decl.end, node.end, ");"]);
      }
    } else if (node.type === "ExportNamedDeclaration") {
      if (node.source) throw new Error("anywidget: re-exports from another module are not supported in an app view");
      if (node.declaration) {
        const decl = node.declaration;
        const names = decl.type === "VariableDeclaration" ? decl.declarations.flatMap((d) => boundNames(d.id)) : [decl.id.name];
        edits.push([node.start, decl.start, ""]);
        for (const name of names) assigned.push(`${EXPORTS}[${JSON.stringify(name)}] = ${name};`);
      } else {
        edits.push([node.start, node.end, ""]);
        for (const spec of node.specifiers) {
          assigned.push(`${EXPORTS}[${JSON.stringify(exportName(spec.exported))}] = ${exportName(spec.local)};`);
        }
      }
    } else if (node.type === "ExportAllDeclaration") {
      throw new Error("anywidget: `export * from` is not supported in an app view");
    }
  }
  let text = source;
  for (const [start, end, replacement] of edits.sort((a, b) => b[0] - a[0])) {
    text = text.slice(0, start) + replacement + text.slice(end);
  }
  return (
    `const ${EXPORTS} = {};\n` +
    text +
    `\n;${assigned.join("\n")}\nwindow.mcpNotebookAnywidget.loaded(${JSON.stringify(key)}, ${EXPORTS});\n`
  );
}

function importInline(source) {
  const key = `m${++serial}`;
  return new Promise((resolve, reject) => {
    let code;
    try {
      code = rewrite(source, key);
    } catch (error) {
      reject(error);
      return;
    }
    // A module's top-level error reaches only window's error event.
    const onError = (event) => {
      if (!pending.has(key)) return;
      pending.delete(key);
      window.removeEventListener("error", onError);
      reject(event.error || new Error(event.message));
    };
    window.addEventListener("error", onError);
    pending.set(key, {
      resolve: (exports) => {
        window.removeEventListener("error", onError);
        resolve(exports);
      },
    });
    const script = document.createElement("script");
    script.type = "module";
    // An import the CSP blocks (or that fails) errors the element itself.
    script.onerror = () => onError({ error: new Error("anywidget: the module's imports could not be loaded") });
    script.textContent = code.replace(/<\/script/gi, "<\\/script");
    document.head.appendChild(script);
  });
}

// The widget definition (`{initialize?, render?}`), as anywidget reads a module: a default
// export (an object, or a function returning one), or the older named `render`.
async function definition(source) {
  if (!loaded.has(source)) {
    loaded.set(
      source,
      // A URL (anywidget takes one too) is imported as it is: give its origin with csp=.
      (/^https?:\/\//.test(source) ? import(/* @vite-ignore */ source) : importInline(source)).then(async (mod) => {
        if (mod.render) return { render: mod.render };
        if (!mod.default) throw new Error("anywidget: the module must export a default object or function");
        return typeof mod.default === "function" ? await mod.default() : mod.default;
      }),
    );
  }
  return loaded.get(source);
}

// What a widget's code sees as `model`: the Backbone model's API, with listeners it adds
// removed when its view goes (anywidget's contract). `send` is looked up at each call:
// widgets.js gives every model one that reaches the kernel.
function modelProxy(model, context) {
  return {
    get: (name) => model.get(name),
    set: (...args) => model.set(...args),
    save_changes: () => model.save_changes(),
    send: (content, callbacks, buffers) => model.send(content, callbacks, buffers),
    on: (name, callback) => model.on(name, callback, context),
    off: (name, callback) => model.off(name, callback, context),
    widget_manager: model.widget_manager,
  };
}

function applyCss(model) {
  const css = model.get("_css");
  const id = `mcp-notebook-anywidget-css-${model.model_id}`;
  let tag = document.getElementById(id);
  if (!css) {
    tag?.remove();
    return;
  }
  if (!tag) {
    tag = Object.assign(document.createElement("style"), { id });
    document.head.appendChild(tag);
  }
  tag.textContent = css;
}

export class AnyModel extends DOMWidgetModel {
  defaults() {
    return {
      ...super.defaults(),
      _model_name: "AnyModel",
      _model_module: "anywidget",
      _view_name: "AnyView",
      _view_module: "anywidget",
    };
  }

  // The definition, with `initialize` run once for this model.
  widget() {
    if (!this._widget) {
      this._widget = definition(this.get("_esm") || "").then(async (def) => {
        const cleanup = await def.initialize?.({ model: modelProxy(this, this), experimental: {} });
        if (typeof cleanup === "function") this.once("destroy", cleanup);
        return def;
      });
    }
    return this._widget;
  }
}

export class AnyView extends DOMWidgetView {
  async render() {
    applyCss(this.model);
    this.listenTo(this.model, "change:_css", () => applyCss(this.model));
    try {
      const def = await this.model.widget();
      const cleanup = await def.render?.({ model: modelProxy(this.model, this), el: this.el, experimental: {} });
      this._cleanup = typeof cleanup === "function" ? cleanup : null;
      this.el.dataset.anywidget = "rendered";
    } catch (error) {
      this.el.dataset.anywidget = "failed";
      this.el.textContent = `This anywidget could not be shown: ${error?.message || error}`;
      console.error("mcp-notebook anywidget:", error);
    }
  }

  remove() {
    this.model.off(null, null, this);
    this._cleanup?.();
    return super.remove();
  }
}

window.mcpNotebookAnywidget = {
  loaded(key, exports) {
    const entry = pending.get(key);
    pending.delete(key);
    entry?.resolve(exports);
  },
};
