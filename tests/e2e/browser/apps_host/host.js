// A small MCP Apps host for tests/e2e/browser/test_apps_host.py, built on the official pieces:
// the TypeScript SDK client talks to the notebook (through the page's own /mcp, which the
// test server relays with the token), and ext-apps' AppBridge talks to the view through
// a sandbox proxy on a second origin, as the spec requires of web hosts.
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { AppBridge, PostMessageTransport } from "@modelcontextprotocol/ext-apps/app-bridge";

const UI = "io.modelcontextprotocol/ui";
const MIME = "text/html;profile=mcp-app";
const log = (...parts) => {
  const line = parts.map((p) => (typeof p === "string" ? p : JSON.stringify(p))).join(" ");
  document.getElementById("log").textContent += line + "\n";
};

async function run({ tool, args, sandboxUrl }) {
  const client = new Client(
    { name: "mcp-notebook test host", version: "1" },
    { capabilities: { extensions: { [UI]: { mimeTypes: [MIME] } } } },
  );
  await client.connect(new StreamableHTTPClientTransport(new URL("/mcp", location.href)));
  const { tools } = await client.listTools();
  const definition = tools.find((t) => t.name === tool);
  const uri = definition?._meta?.ui?.resourceUri;
  if (!uri) throw new Error(`${tool} has no app view`);
  log("tool", tool, "view", uri);

  const frame = document.createElement("iframe");
  frame.id = "sandbox";
  frame.setAttribute("sandbox", "allow-scripts allow-same-origin");
  frame.style.cssText = "width: 640px; height: 200px; border: 1px solid #999";
  document.getElementById("views").appendChild(frame);

  const bridge = new AppBridge(
    client,
    { name: "mcp-notebook test host", version: "1" },
    { serverTools: {}, serverResources: {}, logging: {}, openLinks: {} },
    {
      hostContext: {
        theme: "dark",
        displayMode: "inline",
        availableDisplayModes: ["inline"],
        containerDimensions: { width: 640, maxHeight: 1200 },
        platform: "web",
        styles: { variables: { "--color-text-primary": "rgb(250, 250, 250)" } },
      },
    },
  );
  const state = (window.hostState = { sizes: [], initialized: false, calls: [] });
  bridge.onsizechange = ({ width, height }) => {
    state.sizes.push({ width, height });
    if (height != null) frame.style.height = `${height + 4}px`;
  };
  // The view is read before the call (a host may prefetch it): what the call renders
  // reaches it only through the tool-result notification.
  const [contents] = (await client.readResource({ uri })).contents;
  log("read", uri, contents.mimeType, String(contents.text.length));
  const call = client.callTool({ name: tool, arguments: args });
  bridge.onsandboxready = async () => {
    await bridge.sendSandboxResourceReady({ html: contents.text, csp: contents._meta?.ui?.csp });
  };
  bridge.oninitialized = async () => {
    state.initialized = true;
    log("view initialized");
    await bridge.sendToolInput({ arguments: args });
    const result = await call;
    state.result = result;
    await bridge.sendToolResult(result);
    log("result sent");
  };
  await bridge.connect(new PostMessageTransport(frame.contentWindow, frame.contentWindow));
  frame.src = sandboxUrl; // after connect: the proxy's "ready" must find the bridge listening
}

window.startHost = (options) =>
  run(options).catch((error) => {
    log("host failed:", String(error?.stack || error));
    throw error;
  });
