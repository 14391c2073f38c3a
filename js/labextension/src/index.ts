/**
 * mcp_notebook's JupyterLab and Notebook 7 front end: the call monitor's "Insert as cell",
 * and the MCP panel (panelplugin.ts).
 *
 * A widget click reaches the kernel as a comm message, and nothing a kernel sends in reply
 * makes the notebook insert a cell; so this plugin does it when the kernel asks. Several
 * front ends may share a kernel, and each sees a comm the kernel opens; one without this
 * plugin closes it, and the kernel forgets a comm at its first close. So the kernel's comm
 * (HELLO, `{"hello": token}`) only asks who runs this plugin: each kernel connection of this
 * page that shows a notebook answers by opening a comm of its own to the kernel (TARGET),
 * once per token, then closes the hello. On that comm the kernel sends `{"request": n,
 * "code": "..."}` (to the connection the click came from only); the plugin puts the code in
 * a new code cell below the active cell of that connection's notebook (it does not run it)
 * and answers `{"request": n, "inserted": true, "index": i}` or `{"request": n, "inserted":
 * false, "error": "..."}`. The kernel side: mcp_notebook/ui/frontends.py.
 * The second plugin (trusted.ts) lets only a person answer a confirmation card.
 */
import { JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import { INotebookTracker, NotebookPanel } from '@jupyterlab/notebook';
import { Kernel, KernelMessage } from '@jupyterlab/services';
import { insertBelow } from './cells';
import { FEEDS, panelPlugin } from './panelplugin';

import { trustedAnswers } from './trusted';

/** The comm the kernel opens to ask who runs this plugin (frontends.py: HELLO). */
export const HELLO = 'mcp_notebook.cells';
/** The comm this plugin opens to the kernel (frontends.py: TARGET). */
export const TARGET = 'mcp_notebook.frontend';
/** The longest code accepted, in characters (cellinsert.py: MAX_CODE). */
export const MAX_CODE = 4 * 1024 * 1024;

/** The code in a request, or why it is refused. */
export function codeOf(data: unknown): { code: string } | { error: string } {
  if (typeof data !== 'object' || data === null || Array.isArray(data)) {
    return { error: 'the message is not an object' };
  }
  const keys = Object.keys(data).sort();
  if (keys.length !== 2 || keys[0] !== 'code' || keys[1] !== 'request') {
    return { error: 'the message must hold exactly two fields, "request" and "code"' };
  }
  const code = (data as { code: unknown }).code;
  if (typeof code !== 'string') {
    return { error: '"code" must be a string' };
  }
  if (code.length > MAX_CODE) {
    return { error: `"code" is longer than ${MAX_CODE} characters` };
  }
  return { code };
}

/** The request number in a message, if it has one. */
function requestOf(data: unknown): number | null {
  const value = (data as { request?: unknown } | null)?.request;
  return typeof value === 'number' && Number.isInteger(value) ? value : null;
}

/** The notebook to insert into: the one shown through this connection, the current one
 * first; else any that runs the same kernel. */
function panelFor(tracker: INotebookTracker, kernel: Kernel.IKernelConnection): NotebookPanel | null {
  const through = (panel: NotebookPanel | null) => panel?.sessionContext.session?.kernel === kernel;
  const runs = (panel: NotebookPanel | null) =>
    panel?.sessionContext.session?.kernel?.id === kernel.id;
  for (const test of [through, runs]) {
    if (test(tracker.currentWidget)) {
      return tracker.currentWidget;
    }
    const found = tracker.find(panel => test(panel));
    if (found) {
      return found;
    }
  }
  return null;
}

/** What the plugin answers a request with: `inserted`, and `index` or `error`. */
type Answer = { [key: string]: string | number | boolean | null };

/** The answer to one request from the kernel. */
function answer(
  tracker: INotebookTracker,
  kernel: Kernel.IKernelConnection,
  data: unknown
): Answer {
  const parsed = codeOf(data);
  if ('error' in parsed) {
    return { inserted: false, error: parsed.error };
  }
  const panel = panelFor(tracker, kernel);
  if (panel === null) {
    return { inserted: false, error: 'no open notebook runs this kernel' };
  }
  try {
    return { inserted: true, index: insertBelow(panel, parsed.code) };
  } catch (error) {
    return { inserted: false, error: String(error) };
  }
}

/** This connection's comm to the kernel, and the hello token it answered. */
interface IAnnounced {
  token: unknown;
  comm: Kernel.IComm;
}

function onHello(
  tracker: INotebookTracker,
  kernel: Kernel.IKernelConnection,
  announced: WeakMap<Kernel.IKernelConnection, IAnnounced>
) {
  return (hello: Kernel.IComm, msg: KernelMessage.ICommOpenMsg): void => {
    const token = (msg.content.data as { hello?: unknown } | null)?.hello;
    const known = announced.get(kernel);
    if (known === undefined || known.token !== token || known.comm.isDisposed) {
      // Opened before the hello closes: the kernel reads a close without it as "none here".
      const comm = kernel.createComm(TARGET);
      comm.onMsg = reply => {
        const data = reply.content.data;
        comm.send({ request: requestOf(data), ...answer(tracker, kernel, data) });
      };
      comm.onClose = () => {
        if (announced.get(kernel)?.comm === comm) {
          announced.delete(kernel);
        }
      };
      comm.open({});
      announced.set(kernel, { token, comm });
    }
    FEEDS.get(kernel).hello(); // mcp_notebook was loaded: the MCP panel's feed opens too
    hello.close();
  };
}

const plugin: JupyterFrontEndPlugin<void> = {
  id: 'mcp-notebook:cells',
  description: 'Puts a recorded agent call in a new notebook cell when the call monitor asks.',
  autoStart: true,
  requires: [INotebookTracker],
  activate: (app: JupyterFrontEnd, tracker: INotebookTracker): void => {
    const registered = new WeakSet<Kernel.IKernelConnection>();
    const announced = new WeakMap<Kernel.IKernelConnection, IAnnounced>();
    const register = (kernel: Kernel.IKernelConnection | null | undefined) => {
      if (kernel && !registered.has(kernel)) {
        registered.add(kernel); // a connection keeps its targets across restarts
        kernel.registerCommTarget(HELLO, onHello(tracker, kernel, announced));
      }
    };
    tracker.widgetAdded.connect((_, panel) => {
      register(panel.sessionContext.session?.kernel);
      panel.sessionContext.kernelChanged.connect((_, change) => register(change.newValue));
    });
    tracker.forEach(panel => register(panel.sessionContext.session?.kernel));
  }
};

export default [plugin, trustedAnswers, panelPlugin];
