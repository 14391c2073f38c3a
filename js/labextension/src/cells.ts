/**
 * The notebook's cells, for the call monitor's and the MCP panel's "Insert as cell", and for
 * the panel's "go to the cell that defined it".
 */
import { NotebookPanel } from '@jupyterlab/notebook';

/** A new code cell holding `code` below the active cell, made active; its index. */
export function insertBelow(panel: NotebookPanel, code: string): number {
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

/** The last code cell whose source holds `line` (a registration is the latest run); its
 * index, or -1. */
export function findCell(panel: NotebookPanel, line: string): number {
  const model = panel.content.model;
  if (model === null || !line) {
    return -1;
  }
  for (let index = model.cells.length - 1; index >= 0; index--) {
    const cell = model.cells.get(index);
    if (cell.type === 'code' && cell.sharedModel.getSource().includes(line)) {
      return index;
    }
  }
  return -1;
}

/** Make cell `index` active and scroll it into view. */
export function goToCell(panel: NotebookPanel, index: number): void {
  const notebook = panel.content;
  notebook.activeCellIndex = index;
  notebook.deselectAll();
  const cell = notebook.widgets[index];
  if (cell) {
    void notebook.scrollToCell(cell, 'center');
  }
}
