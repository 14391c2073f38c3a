/**
 * mcp_notebook's JupyterLab front end: the call monitor's "Insert as cell" button.
 *
 * A widget click reaches the kernel as a comm message, and nothing a kernel sends in reply
 * makes JupyterLab insert a cell. So the kernel opens a comm on the target below with
 * `{"code": "..."}`; this plugin puts that code in a new code cell below the notebook's
 * active cell (it does not run it) and answers `{"inserted": true}` or
 * `{"inserted": false, "error": "..."}`, then closes the comm. Without this plugin
 * JupyterLab closes a comm opened on an unknown target: the kernel reads that as "not
 * installed" (mcp_notebook/ui/cellinsert.py).
 */
import { JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import { INotebookTracker, NotebookPanel } from '@jupyterlab/notebook';
import { Kernel, KernelMessage } from '@jupyterlab/services';

/** The comm target the kernel side opens (mcp_notebook/ui/cellinsert.py: TARGET). */
export const TARGET = 'mcp_notebook.cells';
/** The longest code accepted, in characters (cellinsert.py: MAX_CODE). */
export const MAX_CODE = 4 * 1024 * 1024;
/** Comm ids already handled: two connections to one kernel both see its comm_open. */
const SEEN_LIMIT = 256;
const seen: string[] = [];

/** The code in a comm_open's data, or why it is refused. */
export function codeOf(data: unknown): { code: string } | { error: string } {
  if (typeof data !== 'object' || data === null || Array.isArray(data)) {
    return { error: 'the message is not an object' };
  }
  const keys = Object.keys(data);
  if (keys.length !== 1 || keys[0] !== 'code') {
    return { error: 'the message must hold exactly one field, "code"' };
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

/** The first time a comm id is seen in this page (bounded memory). */
function firstTime(commId: string): boolean {
  if (seen.includes(commId)) {
    return false;
  }
  seen.push(commId);
  if (seen.length > SEEN_LIMIT) {
    seen.shift();
  }
  return true;
}

/** The notebook to insert into: the current one if it runs this kernel, else the first. */
function panelFor(tracker: INotebookTracker, kernelId: string): NotebookPanel | null {
  const runs = (panel: NotebookPanel | null) =>
    panel !== null && panel.sessionContext.session?.kernel?.id === kernelId;
  if (runs(tracker.currentWidget)) {
    return tracker.currentWidget;
  }
  return tracker.find(panel => runs(panel)) ?? null;
}

/** A new code cell holding `code` below the active cell, made active; its index. */
function insertBelow(panel: NotebookPanel, code: string): number {
  const notebook = panel.content;
  const model = notebook.model;
  if (model === null) {
    throw new Error('the notebook has no model');
  }
  const index = Math.min(notebook.activeCellIndex + 1, model.cells.length);
  model.sharedModel.insertCell(index, { cell_type: 'code', source: code });
  notebook.activeCellIndex = index;
  notebook.deselectAll();
  return index;
}

function handler(tracker: INotebookTracker, kernel: Kernel.IKernelConnection) {
  return (comm: Kernel.IComm, msg: KernelMessage.ICommOpenMsg): void => {
    if (!firstTime(comm.commId)) {
      return; // another connection of this page to the same kernel answers it
    }
    let reply: { inserted: boolean; index?: number; error?: string };
    const parsed = codeOf(msg.content.data);
    const panel = panelFor(tracker, kernel.id);
    if ('error' in parsed) {
      reply = { inserted: false, error: parsed.error };
    } else if (panel === null) {
      reply = { inserted: false, error: 'no open notebook runs this kernel' };
    } else {
      try {
        reply = { inserted: true, index: insertBelow(panel, parsed.code) };
      } catch (error) {
        reply = { inserted: false, error: String(error) };
      }
    }
    comm.send(reply);
    comm.close();
  };
}

const plugin: JupyterFrontEndPlugin<void> = {
  id: 'mcp-notebook:cells',
  description: 'Puts a recorded agent call in a new notebook cell when the call monitor asks.',
  autoStart: true,
  requires: [INotebookTracker],
  activate: (app: JupyterFrontEnd, tracker: INotebookTracker): void => {
    const registered = new WeakSet<Kernel.IKernelConnection>();
    const register = (kernel: Kernel.IKernelConnection | null | undefined) => {
      if (kernel && !registered.has(kernel)) {
        registered.add(kernel); // a connection keeps its targets across restarts
        kernel.registerCommTarget(TARGET, handler(tracker, kernel));
      }
    };
    tracker.widgetAdded.connect((_, panel) => {
      register(panel.sessionContext.session?.kernel);
      panel.sessionContext.kernelChanged.connect((_, change) => register(change.newValue));
    });
    tracker.forEach(panel => register(panel.sessionContext.session?.kernel));
  }
};

export default plugin;
