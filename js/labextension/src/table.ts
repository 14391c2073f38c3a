/**
 * The MCP panel's calls table: newest first, filtered by status, tool and client and a
 * text search, bursts of the same call from one app view folded into one row with a count,
 * and virtualised (only the rows in view are in the page: 10,000 calls cost 30 rows).
 */
import { LabIcon, bellIcon, checkIcon, circleEmptyIcon, closeIcon, ellipsesIcon, errorIcon, historyIcon,
  offlineBoltIcon, pauseIcon, runningIcon, stopIcon } from '@jupyterlab/ui-components';
import { IRow } from './feed';

/** Row height in pixels (fixed: what makes the table cheap to scroll). */
export const ROW_HEIGHT = 24;

/** Each status: its icon, its words, and a CSS class coloured from the theme. */
export const STATUSES: { [status: string]: { icon: LabIcon; label: string } } = {
  error: { icon: errorIcon, label: 'error' },
  denied: { icon: stopIcon, label: 'denied' },
  interrupted: { icon: offlineBoltIcon, label: 'interrupted' },
  cancelled: { icon: circleEmptyIcon, label: 'cancelled' },
  dropped: { icon: closeIcon, label: 'dropped: client gone' },
  paused: { icon: pauseIcon, label: 'paused in the debugger' },
  awaiting: { icon: bellIcon, label: 'waiting for approval' },
  behind: { icon: historyIcon, label: 'queued behind a cell' },
  queued: { icon: ellipsesIcon, label: 'queued' },
  running: { icon: runningIcon, label: 'running' },
  done: { icon: checkIcon, label: 'done' }
};

/** One line of the table: a call, or a burst of calls from one app view. */
export interface ILine {
  row: IRow; // the newest of the burst
  count: number;
  ids: number[];
}

export interface IFilter {
  status: string; // '' = any
  tool: string;
  client: string;
  text: string;
}

function matches(row: IRow, filter: IFilter): boolean {
  if (filter.status && row.status !== filter.status) {
    return false;
  }
  if (filter.tool && row.target !== filter.tool) {
    return false;
  }
  if (filter.client && row.client !== filter.client) {
    return false;
  }
  if (filter.text) {
    const text = filter.text.toLowerCase();
    const hay = `${row.client} ${row.method} ${row.target} ${row.args} ${row.label} ${row.decided ?? ''}`;
    return hay.toLowerCase().includes(text);
  }
  return true;
}

/** The lines to show, newest first: consecutive calls of one tool from one app view (a
 * slider drag, a key held down) become one line with their count. */
export function lines(rows: Iterable<IRow>, filter: IFilter): ILine[] {
  const found: ILine[] = [];
  let last: ILine | null = null;
  for (const row of rows) {
    if (!matches(row, filter)) {
      continue;
    }
    const prev: IRow | undefined = last?.row;
    if (last && prev && row.view && prev.view === row.view && prev.target === row.target &&
        prev.client === row.client && prev.method === row.method) {
      last.row = row;
      last.count++;
      last.ids.push(row.id);
      continue;
    }
    last = { row, count: 1, ids: [row.id] };
    found.push(last);
  }
  return found.reverse();
}

function time(seconds: number): string {
  const d = new Date(seconds * 1000);
  return d.toLocaleTimeString([], { hour12: false });
}

export function took(duration: number | null): string {
  if (duration === null) {
    return '…';
  }
  return duration < 1 ? `${Math.round(duration * 1000)} ms` : `${duration.toFixed(1)} s`;
}

function cell(parent: HTMLElement, text: string, css: string): HTMLElement {
  const node = document.createElement('span');
  node.className = css;
  node.textContent = text;
  node.title = text;
  parent.appendChild(node);
  return node;
}

/** The virtualised table; `select(line)` runs on a click. */
export class CallsTable {
  readonly node = document.createElement('div');

  constructor(private readonly select: (line: ILine) => void) {
    this.node.className = 'mcp-calls-scroll';
    this._spacer.className = 'mcp-calls-spacer';
    this.node.appendChild(this._spacer);
    this.node.addEventListener('scroll', () => this._paint());
  }

  /** Show `lines`, keeping the scroll position (the newest are on top). */
  show(lines: ILine[], selected: number | null): void {
    this._lines = lines;
    this._selected = selected;
    this._spacer.style.height = `${lines.length * ROW_HEIGHT}px`;
    this._paint();
  }

  get count(): number {
    return this._lines.length;
  }

  private _paint(): void {
    const top = this.node.scrollTop;
    const height = this.node.clientHeight || 400;
    const first = Math.max(0, Math.floor(top / ROW_HEIGHT) - 5);
    const last = Math.min(this._lines.length, Math.ceil((top + height) / ROW_HEIGHT) + 5);
    this._spacer.replaceChildren();
    for (let i = first; i < last; i++) {
      this._spacer.appendChild(this._line(this._lines[i], i));
    }
  }

  private _line(line: ILine, index: number): HTMLElement {
    const { row } = line;
    const node = document.createElement('div');
    const known = STATUSES[row.status] ?? STATUSES.queued;
    node.className = `mcp-call mcp-s-${row.status}`;
    if (line.ids.includes(this._selected ?? -1)) {
      node.classList.add('mcp-selected');
    }
    node.style.top = `${index * ROW_HEIGHT}px`;
    node.dataset.call = String(row.id);
    node.dataset.status = row.status;
    const icon = document.createElement('span');
    icon.className = 'mcp-call-icon';
    icon.title = row.label; // the words, where the side area is too narrow for them
    known.icon.element({ container: icon, height: '14px', width: '14px' });
    node.appendChild(icon);
    cell(node, time(row.time), 'mcp-c-time');
    cell(node, row.client, 'mcp-c-client');
    cell(node, row.method, 'mcp-c-method');
    const target = cell(node, (row.view ? 'view: ' : '') + row.target + (row.via ? ` (via ${row.via})` : ''), 'mcp-c-target');
    if (line.count > 1) {
      const badge = document.createElement('span');
      badge.className = 'mcp-burst';
      badge.textContent = `×${line.count}`;
      badge.title = `${line.count} calls in a row from the app view ${row.view}`;
      target.prepend(badge);
    }
    cell(node, row.args, 'mcp-c-args');
    cell(node, took(row.duration), 'mcp-c-took');
    const status = cell(node, row.label, 'mcp-c-status');
    status.title = row.decided ? `${row.label}: ${row.decided}` : known.label;
    node.addEventListener('click', () => this.select(line));
    return node;
  }

  private _spacer = document.createElement('div');
  private _lines: ILine[] = [];
  private _selected: number | null = null;
}
