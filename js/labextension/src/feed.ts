/**
 * The MCP panel's feed from one kernel (mcp_notebook/ui/panelfeed.py): this page opens a comm
 * to PANEL on a notebook's kernel connection; the kernel sends a snapshot (the server, its
 * clients, what is registered, the calls, the confirmations that wait), then batched updates
 * (at most ten a second). Requests `{request: n, op, ...}` get one answer each. Everything a
 * view shows comes from here; views listen to `changed`.
 */
import { Kernel } from '@jupyterlab/services';
import { ISignal, Signal } from '@lumino/signaling';

/** The comm target the kernel registers (panelfeed.py: PANEL). */
export const PANEL = 'mcp_notebook.panel';
/** Calls kept in the page, at most (the oldest go first). */
export const MAX_CALLS = 10000;
/** Seconds a request waits for its answer. */
const ANSWER_WAIT = 30;

export interface IRow {
  id: number;
  time: number;
  client: string;
  method: string;
  target: string;
  view: string | null;
  via: string | null;
  args: string;
  duration: number | null;
  status: string;
  label: string;
  decided: string | null;
}

export interface IClient {
  name: string;
  version: string;
  protocol: string;
  era: string;
  transport: string;
}

export interface IState {
  name: string;
  running: boolean;
  url: string | null;
  token: string | null;
  transports: string[];
  eras: string[];
  policy: string;
  timeout: number;
  calls: number;
  history: number;
  clients: IClient[];
}

export interface IRegistration {
  kind: string;
  name: string;
  description: string;
  find: string | null;
}

export interface IPending {
  id: number;
  tool: string;
  client: string;
  description: string;
  hints: string[];
  arguments: string;
  remaining: number;
  timeout: number;
  /** When this page learnt of it (performance.now(), ms): the countdown starts there. */
  seen: number;
}

export interface IPart {
  text: string;
  cut: boolean;
  total?: number;
  whole?: string;
}

export interface IDetail {
  id: number;
  row: IRow;
  arguments: IPart | null;
  result: IPart | null;
  output: IPart | null;
  error: IPart | null;
  traceback: IPart | null;
  abbreviated: string[];
  timing: { queued: number | null; waiting: number | null; running: number | null; total: number | null };
  code: string | null;
}

export interface IAnswer {
  ok: boolean;
  error?: string;
  decided?: string;
  detail?: IDetail;
  on?: boolean;
  listening?: boolean; // a pause set: whether a debugger would see it
}

type Message = { [key: string]: unknown };

/** Seconds left before a waiting confirmation is denied, counted in this page. */
export function secondsLeft(pending: IPending, now: number = performance.now()): number {
  return Math.max(0, pending.remaining - (now - pending.seen) / 1000);
}

export class Feed {
  constructor(readonly kernel: Kernel.IKernelConnection) {}

  readonly rows = new Map<number, IRow>(); // by call id, oldest first
  state: IState | null = null;
  registrations: IRegistration[] = [];
  pending: IPending[] = [];

  /** The kernel sent something new. */
  get changed(): ISignal<Feed, void> {
    return this._changed;
  }
  /** The kernel asks this page to show the panel (`%mcp monitor` ran here). */
  get openRequested(): ISignal<Feed, void> {
    return this._open;
  }
  get connected(): boolean {
    return this._comm !== null && !this._comm.isDisposed;
  }

  /** Open the comm, if the kernel has the target and it is not open yet. */
  async connect(): Promise<void> {
    if (this.connected || this._connecting || this.kernel.isDisposed) {
      return;
    }
    this._connecting = true;
    try {
      const info = await this.kernel.requestCommInfo({ target_name: PANEL });
      const comms = info.content.status === 'ok' ? info.content.comms : {};
      const known = Object.values(comms).some(c => c.target_name === PANEL);
      if (!known && !this._asked) {
        return; // mcp_notebook is not loaded in this kernel (yet): its hello says when
      }
      this._asked = false;
      const comm = this.kernel.createComm(PANEL);
      comm.onMsg = msg => this._take(msg.content.data as Message);
      comm.onClose = () => {
        if (this._comm === comm) {
          this._comm = null;
          this._failAll('the kernel closed the panel feed');
        }
      };
      this._comm = comm;
      comm.open({});
    } catch {
      // the kernel went away meanwhile: the next hello or connection tries again
    } finally {
      this._connecting = false;
    }
  }

  /** The kernel's hello: mcp_notebook was loaded; open whether or not comm info lists it. */
  hello(): void {
    if (!this.connected) {
      this._asked = true;
      void this.connect();
    }
  }

  /** Send a request; its answer (or an error answer if none comes). */
  request(op: string, fields: Message = {}): Promise<IAnswer> {
    const comm = this._comm;
    if (comm === null || comm.isDisposed) {
      return Promise.resolve({ ok: false, error: 'the kernel has no MCP panel feed' });
    }
    const request = ++this._requests;
    return new Promise<IAnswer>(resolve => {
      const timer = window.setTimeout(() => {
        this._waiting.delete(request);
        resolve({ ok: false, error: `no answer from the kernel in ${ANSWER_WAIT} s (is a cell running?)` });
      }, ANSWER_WAIT * 1000);
      this._waiting.set(request, answer => {
        window.clearTimeout(timer);
        resolve(answer);
      });
      comm.send({ ...fields, request, op });
    });
  }

  decide(call: number, approve: boolean, where: string, who: string | null, args?: unknown): Promise<IAnswer> {
    const fields: Message = { call, approve, where };
    if (who) {
      fields.who = who.slice(0, 64);
    }
    if (approve && args !== undefined) {
      fields.arguments = args;
    }
    return this.request('decide', fields);
  }

  dispose(): void {
    this._failAll('closed');
    if (this._comm && !this._comm.isDisposed) {
      this._comm.close();
    }
    this._comm = null;
    Signal.clearData(this);
  }

  private _take(data: Message): void {
    if (typeof data !== 'object' || data === null) {
      return;
    }
    switch (data.kind) {
      case 'snapshot':
        this.rows.clear();
        this._state(data);
        this._calls(data.calls);
        break;
      case 'update':
        this._state(data);
        this._calls(data.calls);
        break;
      case 'calls':
        this._calls(data.calls);
        break;
      case 'answer': {
        const done = this._waiting.get(data.request as number);
        if (done) {
          this._waiting.delete(data.request as number);
          done(data as unknown as IAnswer);
        }
        return;
      }
      case 'open':
        this._open.emit();
        return;
      default:
        return;
    }
    this._changed.emit();
  }

  private _state(data: Message): void {
    if (data.state) {
      this.state = data.state as IState;
    }
    if (Array.isArray(data.registrations)) {
      this.registrations = data.registrations as IRegistration[];
    }
    if (Array.isArray(data.pending)) {
      const now = performance.now();
      this.pending = (data.pending as IPending[]).map(p => ({ ...p, seen: now }));
    }
  }

  private _calls(calls: unknown): void {
    if (!Array.isArray(calls)) {
      return;
    }
    for (const row of calls as IRow[]) {
      this.rows.delete(row.id); // a changed call keeps its place by id: re-insert in order
      this.rows.set(row.id, row);
    }
    if (calls.length && this._outOfOrder()) {
      const sorted = [...this.rows.values()].sort((a, b) => a.id - b.id);
      this.rows.clear();
      sorted.forEach(r => this.rows.set(r.id, r));
    }
    while (this.rows.size > MAX_CALLS) {
      this.rows.delete(this.rows.keys().next().value as number);
    }
  }

  private _outOfOrder(): boolean {
    let last = -Infinity;
    for (const id of this.rows.keys()) {
      if (id < last) {
        return true;
      }
      last = id;
    }
    return false;
  }

  private _failAll(error: string): void {
    for (const done of this._waiting.values()) {
      done({ ok: false, error });
    }
    this._waiting.clear();
  }

  private _comm: Kernel.IComm | null = null;
  private _connecting = false;
  private _asked = false;
  private _requests = 0;
  private _waiting = new Map<number, (answer: IAnswer) => void>();
  private _changed = new Signal<Feed, void>(this);
  private _open = new Signal<Feed, void>(this);
}

/** One feed per kernel connection of this page. */
export class Feeds {
  get added(): ISignal<Feeds, Feed> {
    return this._added;
  }

  get(kernel: Kernel.IKernelConnection): Feed {
    let feed = this._feeds.get(kernel);
    if (feed === undefined) {
      const made = new Feed(kernel);
      this._feeds.set(kernel, made);
      this._all.add(made);
      kernel.disposed.connect(() => {
        this._all.delete(made);
        made.dispose();
      });
      kernel.connectionStatusChanged.connect((_, status) => {
        if (status === 'connected') {
          void made.connect();
        }
      });
      this._added.emit(made);
      void made.connect();
      feed = made;
    }
    return feed;
  }

  find(kernel: Kernel.IKernelConnection | null | undefined): Feed | null {
    return kernel ? this._feeds.get(kernel) ?? null : null;
  }

  get all(): Feed[] {
    return [...this._all];
  }

  private _feeds = new WeakMap<Kernel.IKernelConnection, Feed>();
  private _all = new Set<Feed>();
  private _added = new Signal<Feeds, Feed>(this);
}
