/**
 * The MCP panel (right side area): the active notebook's server (state, URL, transports,
 * the token hidden with a copy button, start / stop), its clients, what is registered (click
 * to go to the cell), the confirmations that wait (arguments editable, a countdown), the
 * calls table (table.ts) and a detail pane for the selected call. Everything comes from the
 * notebook's kernel through its feed (feed.ts); answers go back through it.
 */
import { NotebookPanel } from '@jupyterlab/notebook';
import { Widget } from '@lumino/widgets';
import { findCell, goToCell, insertBelow } from './cells';
import { Feed, IDetail, IPart, IPending, secondsLeft } from './feed';
import { CallsTable, IFilter, ILine, STATUSES, lines, took } from './table';

/** Longest part shown unfolded, in lines. */
const FOLD_LINES = 24;

function el<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  css = '',
  text = '',
  parent?: HTMLElement
): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  if (css) {
    node.className = css;
  }
  if (text) {
    node.textContent = text;
  }
  parent?.appendChild(node);
  return node;
}

function button(text: string, css: string, parent: HTMLElement, click: () => void): HTMLButtonElement {
  const node = el('button', `jp-Button jp-mod-styled mcp-button ${css}`, text, parent);
  node.type = 'button';
  node.addEventListener('click', click);
  return node;
}

/** A part of a call (arguments, result, ...): folded when long, and when the kernel sent
 * only its beginning, where the rest is. */
function part(title: string, value: IPart | null, parent: HTMLElement, insert: (code: string) => void): void {
  if (!value) {
    return;
  }
  const box = el('div', `mcp-part mcp-part-${title.toLowerCase()}`, '', parent);
  const lineCount = value.text.split('\n').length;
  if (lineCount > FOLD_LINES) {
    const fold = el('details', '', '', box);
    el('summary', 'mcp-part-title', `${title} (${lineCount} lines)`, fold);
    el('pre', 'mcp-mono', value.text, fold);
  } else {
    el('div', 'mcp-part-title', title, box);
    el('pre', 'mcp-mono', value.text, box);
  }
  if (value.cut && value.whole) {
    const note = el('div', 'mcp-note', `The first ${value.text.length} of ${value.total} characters. All of it: `, box);
    el('code', '', value.whole, note);
    button('Insert as cell', 'mcp-small', note, () => insert(value.whole as string));
  }
}

export class McpPanel extends Widget {
  constructor(private readonly who: () => string | null) {
    super();
    this.id = 'mcp-notebook-panel';
    this.addClass('mcp-panel');
    this.title.caption = 'MCP: the notebook server, its clients and calls';
    this.title.label = 'MCP';
    const node = this.node;
    this._header = el('div', 'mcp-section mcp-server', '', node);
    this._cards = el('div', 'mcp-section mcp-cards', '', node);
    this._clients = el('div', 'mcp-section mcp-clients', '', node);
    this._registered = el('details', 'mcp-section mcp-registered', '', node);
    this._registered.open = true;
    const calls = el('div', 'mcp-section mcp-calls', '', node);
    const bar = el('div', 'mcp-filters', '', calls);
    this._status = el('select', 'mcp-filter-status', '', bar);
    this._tool = el('select', 'mcp-filter-tool', '', bar);
    this._client = el('select', 'mcp-filter-client', '', bar);
    this._search = el('input', 'mcp-search jp-mod-styled', '', bar);
    this._search.type = 'search';
    this._search.placeholder = 'Search calls';
    this._count = el('span', 'mcp-count', '', bar);
    for (const select of [this._status, this._tool, this._client]) {
      select.classList.add('jp-mod-styled');
      select.addEventListener('change', () => this._renderCalls());
    }
    this._search.addEventListener('input', () => this._renderCalls());
    const head = el('div', 'mcp-call mcp-calls-head', '', calls);
    for (const [text, css] of [['', 'mcp-call-icon'], ['time', 'mcp-c-time'], ['client', 'mcp-c-client'],
      ['method', 'mcp-c-method'], ['target', 'mcp-c-target'], ['arguments', 'mcp-c-args'],
      ['took', 'mcp-c-took'], ['status', 'mcp-c-status']]) {
      el('span', css, text, head);
    }
    this._table = new CallsTable(line => this._select(line));
    calls.appendChild(this._table.node);
    this._detail = el('div', 'mcp-section mcp-detail', '', node);
    this._timer = window.setInterval(() => this._tick(), 1000);
    this._render();
  }

  /** Show this notebook's feed (null: a notebook without mcp_notebook, or none). */
  follow(feed: Feed | null, notebook: NotebookPanel | null): void {
    this._notebook = notebook;
    if (feed === this._feed) {
      return;
    }
    this._feed?.changed.disconnect(this._schedule, this);
    this._feed = feed;
    this._selected = null;
    this._detail.replaceChildren();
    feed?.changed.connect(this._schedule, this);
    this._render();
  }

  get feed(): Feed | null {
    return this._feed;
  }

  /** Scroll to call `id`'s confirmation card, if it waits. */
  showCard(id: number): void {
    const card = this._cards.querySelector(`[data-call="${id}"]`);
    card?.scrollIntoView({ block: 'nearest' });
    (card?.querySelector('textarea') as HTMLTextAreaElement | null)?.focus();
  }

  dispose(): void {
    window.clearInterval(this._timer);
    super.dispose();
  }

  protected onAfterShow(): void {
    this._render();
  }

  private _schedule(): void {
    if (this._frame === 0) {
      this._frame = requestAnimationFrame(() => {
        this._frame = 0;
        this._render();
      });
    }
  }

  private _render(): void {
    // What rarely changes is rebuilt only when it did (a button keeps its focus).
    const feed = this._feed;
    const key = JSON.stringify([feed?.state ?? null, feed === null]);
    if (key !== this._stateKey) {
      this._stateKey = key;
      this._renderServer();
      this._renderClients();
    }
    if (feed?.registrations !== this._registrations) {
      this._registrations = feed?.registrations ?? null;
      this._renderRegistered();
    }
    this._renderCards();
    this._renderFilters();
    this._renderCalls();
  }

  private _renderServer(): void {
    const box = this._header;
    box.replaceChildren();
    const feed = this._feed;
    const state = feed?.state;
    if (!feed || !state) {
      el('div', 'mcp-empty', feed ? 'Waiting for the kernel…' :
        'This notebook has no MCP server: run %load_ext mcp_notebook, then %mcp start.', box);
      return;
    }
    const title = el('div', 'mcp-title', '', box);
    el('b', '', state.name, title);
    el('span', `mcp-badge ${state.running ? 'mcp-running' : 'mcp-stopped'}`, state.running ? 'serving' : 'stopped', title);
    const run = (code: string) => void feed.kernel.requestExecute({ code, silent: true, store_history: false });
    if (state.running) {
      button('Stop', 'mcp-stop', title, () => run('%mcp stop'));
    } else {
      button('Start', 'mcp-start', title, () => run('%mcp start'));
    }
    if (state.url) {
      const url = el('div', 'mcp-url', '', box);
      el('code', '', state.url, url);
      button('Copy', 'mcp-small', url, () => void navigator.clipboard?.writeText(state.url ?? ''));
    }
    if (state.token) {
      const token = el('div', 'mcp-token', 'Token ', box);
      el('code', '', '•'.repeat(12), token);
      button('Copy token', 'mcp-small', token, () => void navigator.clipboard?.writeText(state.token ?? ''));
    }
    if (state.transports.length) {
      el('div', 'mcp-facts', `${state.transports.join(', ')} · ${state.eras.join(', ')}`, box);
    }
    el('div', 'mcp-facts', `confirm: ${state.policy}, timeout ${state.timeout} s · ${state.calls}/${state.history} calls kept`, box);
  }

  private _renderCards(): void {
    const feed = this._feed;
    const waiting = feed?.pending ?? [];
    const shown = new Set(waiting.map(p => String(p.id)));
    for (const card of Array.from(this._cards.children) as HTMLElement[]) {
      if (!shown.has(card.dataset.call ?? '')) {
        card.remove(); // decided: the row says by whom
      }
    }
    for (const pending of waiting) {
      if (!this._cards.querySelector(`[data-call="${pending.id}"]`)) {
        this._cards.appendChild(this._card(feed as Feed, pending));
      }
    }
    this._tick();
  }

  private _card(feed: Feed, pending: IPending): HTMLElement {
    const card = el('div', 'mcp-card');
    card.dataset.call = String(pending.id);
    const title = el('div', 'mcp-card-title', '', card);
    el('b', '', pending.client, title);
    title.append(' asks to run ');
    el('b', '', pending.tool, title);
    title.append(` (call #${pending.id}${pending.hints.length ? ', ' + pending.hints.join(', ') : ''})`);
    if (pending.description) {
      el('div', 'mcp-card-about', pending.description, card);
    }
    const editor = el('textarea', 'mcp-mono jp-mod-styled', '', card);
    editor.value = pending.arguments;
    editor.rows = Math.min(Math.max(pending.arguments.split('\n').length, 2), 12);
    const row = el('div', 'mcp-card-actions', '', card);
    const note = el('span', 'mcp-note', '', row);
    const answer = (approve: boolean) => {
      let args: unknown;
      if (approve) {
        try {
          args = JSON.parse(editor.value);
        } catch (error) {
          note.textContent = `Not valid JSON: ${error}`;
          note.classList.add('mcp-error-text');
          return;
        }
      }
      void feed.decide(pending.id, approve, 'panel', this.who(), args).then(reply => {
        if (!reply.ok) {
          note.textContent = reply.decided ? `Too late: ${reply.decided}.` : `${reply.error}`;
          note.classList.add('mcp-error-text');
        }
      });
    };
    const approve = button('Approve', 'mcp-approve jp-mod-accept', row, () => answer(true));
    const deny = button('Deny', 'mcp-deny jp-mod-warn', row, () => answer(false));
    row.prepend(approve, deny);
    el('span', 'mcp-countdown', '', row);
    return card;
  }

  private _tick(): void {
    const feed = this._feed;
    if (!feed) {
      return;
    }
    for (const pending of feed.pending) {
      const countdown = this._cards.querySelector(`[data-call="${pending.id}"] .mcp-countdown`);
      if (countdown) {
        const left = Math.ceil(secondsLeft(pending));
        countdown.textContent = `Denied in ${Math.floor(left / 60)}:${String(left % 60).padStart(2, '0')} unless approved`;
      }
    }
  }

  private _renderClients(): void {
    const box = this._clients;
    box.replaceChildren();
    const state = this._feed?.state;
    if (!state) {
      return;
    }
    el('div', 'mcp-section-title', `Clients (${state.clients.length})`, box);
    if (!state.clients.length) {
      el('div', 'mcp-empty', 'No client connected yet.', box);
      return;
    }
    const seen = new Map<string, number>();
    for (const row of this._feed?.rows.values() ?? []) {
      seen.set(row.client.split(' via ')[0], row.time);
    }
    for (const client of state.clients) {
      const line = el('div', 'mcp-client', '', box);
      el('b', '', `${client.name} ${client.version}`.trim(), line);
      const last = seen.get(`${client.name} ${client.version}`.trim()) ?? seen.get(client.name);
      const when = last ? new Date(last * 1000).toLocaleTimeString([], { hour12: false }) : 'none yet';
      el('span', 'mcp-facts', ` ${client.era} · ${client.transport} · last call ${when}`, line);
    }
  }

  private _renderRegistered(): void {
    const box = this._registered;
    const open = box.open;
    box.replaceChildren();
    const registrations = this._feed?.registrations ?? [];
    el('summary', 'mcp-section-title', `Registered (${registrations.length})`, box);
    box.open = open;
    for (const item of registrations) {
      const line = el('div', 'mcp-registration', '', box);
      el('span', `mcp-kind mcp-kind-${item.kind}`, item.kind, line);
      const name = el('a', 'mcp-reg-name', item.name, line);
      name.title = 'Go to the cell that defined it';
      name.addEventListener('click', () => this._goTo(item.find, item.name));
      if (item.description) {
        el('span', 'mcp-reg-about', item.description, line);
      }
    }
  }

  private _goTo(line: string | null, name: string): void {
    const notebook = this._notebook;
    if (!notebook) {
      return;
    }
    let index = line ? findCell(notebook, line) : -1;
    if (index < 0) {
      index = findCell(notebook, `"${name}"`);
    }
    if (index >= 0) {
      goToCell(notebook, index);
    }
  }

  private _renderFilters(): void {
    const rows = [...(this._feed?.rows.values() ?? [])];
    const fill = (select: HTMLSelectElement, any: string, values: string[], label = (v: string) => v) => {
      const current = select.value;
      const wanted = ['', ...values];
      const have = Array.from(select.options).map(o => o.value);
      if (have.join('\n') !== wanted.join('\n')) {
        select.replaceChildren();
        for (const value of wanted) {
          const option = el('option', '', value ? label(value) : any, select);
          option.value = value;
        }
        select.value = wanted.includes(current) ? current : '';
      }
    };
    fill(this._status, 'status', Object.keys(STATUSES), v => STATUSES[v].label);
    fill(this._tool, 'target', [...new Set(rows.map(r => r.target))].sort());
    fill(this._client, 'client', [...new Set(rows.map(r => r.client))].sort());
  }

  private _renderCalls(): void {
    const filter: IFilter = {
      status: this._status.value,
      tool: this._tool.value,
      client: this._client.value,
      text: this._search.value.trim()
    };
    const shown = lines(this._feed?.rows.values() ?? [], filter);
    this._table.show(shown, this._selected);
    const total = this._feed?.rows.size ?? 0;
    this._count.textContent = `${shown.length} of ${total}`;
    if (this._selected !== null && this._feed?.rows.has(this._selected)) {
      const row = this._feed.rows.get(this._selected);
      if (row && (row.status !== this._detailStatus || row.decided !== this._detailDecided)) {
        void this._loadDetail(this._selected);
      }
    }
  }

  private _select(line: ILine): void {
    this._selected = line.row.id;
    this._renderCalls();
    void this._loadDetail(line.row.id, line.count);
  }

  private async _loadDetail(id: number, count = 1): Promise<void> {
    const feed = this._feed;
    if (!feed) {
      return;
    }
    const row = feed.rows.get(id);
    this._detailStatus = row?.status ?? null;
    this._detailDecided = row?.decided ?? null;
    const answer = await feed.request('detail', { call: id });
    if (this._selected !== id || feed !== this._feed) {
      return; // another call was selected meanwhile
    }
    this._detail.replaceChildren();
    if (!answer.ok || !answer.detail) {
      el('div', 'mcp-error-text', answer.error ?? 'no details', this._detail);
      return;
    }
    this._renderDetail(feed, answer.detail, count);
  }

  private _renderDetail(feed: Feed, detail: IDetail, count: number): void {
    const box = this._detail;
    const row = detail.row;
    const head = el('div', `mcp-detail-head mcp-s-${row.status}`, '', box);
    el('b', '', `#${row.id} ${row.method} ${row.target}`, head);
    el('span', 'mcp-c-status', ` ${row.label}`, head);
    const facts = [row.client, new Date(row.time * 1000).toLocaleTimeString([], { hour12: false })];
    if (row.view) {
      facts.push(`from the app view ${row.view}` + (count > 1 ? ` (the last of ${count} calls in a row)` : ''));
    }
    if (row.via) {
      facts.push(`dispatched through ${row.via}`);
    }
    el('div', 'mcp-facts', facts.join(' · '), box);
    if (row.decided) {
      el('div', 'mcp-decided', `Confirmation: ${row.decided}.`, box);
    }
    const t = detail.timing;
    const timing = [['queued', t.queued], ['waiting for a person', t.waiting], ['running', t.running], ['total', t.total]]
      .filter(([, v]) => v !== null && v !== undefined)
      .map(([name, v]) => `${name} ${took(v as number)}`);
    if (timing.length) {
      el('div', 'mcp-timing', timing.join(' · '), box);
    }
    const insert = (code: string) => this._insert(code);
    part('Arguments', detail.arguments, box, insert);
    part('Result', detail.result, box, insert);
    part('Output', detail.output, box, insert);
    part('Error', detail.error, box, insert);
    part('Traceback', detail.traceback, box, insert);
    const actions = el('div', 'mcp-actions', '', box);
    if (detail.code) {
      const code = detail.code;
      button('Insert as cell', 'mcp-insert', actions, () => insert(code));
    }
    button('Replay', 'mcp-replay', actions, () => insert(`mcp.calls.find(${row.id}).replay()`));
    button('to_pytest', 'mcp-pytest', actions, () =>
      insert(`mcp.calls.to_pytest("test_call_${row.id}.py", [mcp.calls.find(${row.id})])`));
    const pause = button('Pause next call', 'mcp-pause', actions, () => {
      const on = !pause.classList.contains('mcp-on');
      void feed.request('pause', { on }).then(reply => {
        const set = reply.ok && !!reply.on;
        pause.classList.toggle('mcp-on', set);
        pause.textContent = !set ? 'Pause next call'
          : reply.listening ? 'Pausing the next call' : 'Pausing the next call once a debugger listens';
      });
    });
  }

  private _insert(code: string): void {
    if (this._notebook) {
      insertBelow(this._notebook, code);
    }
  }

  private _feed: Feed | null = null;
  private _stateKey = '';
  private _registrations: unknown = undefined;
  private _notebook: NotebookPanel | null = null;
  private _selected: number | null = null;
  private _detailStatus: string | null = null;
  private _detailDecided: string | null = null;
  private _frame = 0;
  private _timer: number;
  private _header: HTMLElement;
  private _cards: HTMLElement;
  private _clients: HTMLElement;
  private _registered: HTMLDetailsElement;
  private _status: HTMLSelectElement;
  private _tool: HTMLSelectElement;
  private _client: HTMLSelectElement;
  private _search: HTMLInputElement;
  private _count: HTMLElement;
  private _table: CallsTable;
  private _detail: HTMLElement;
}
