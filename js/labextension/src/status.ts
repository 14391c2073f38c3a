/**
 * Confirmations nobody can miss: each waiting confirmation raises a JupyterLab notification
 * (Approve / Deny / Show) in every page whose feed shows it, wherever the notebook is
 * scrolled and whether or not the panel is open; and a status-bar item says what the server
 * does ("MCP · serving · 2 clients · 1 waiting"). Both answer through the kernel's one
 * decision (feed.ts `decide`): the first answer wins, the others are told it was decided.
 */
import { Notification } from '@jupyterlab/apputils';
import { Widget } from '@lumino/widgets';
import { Feed, IPending, secondsLeft } from './feed';

/** What a notification's Show does: open the panel at this call's card. */
export type Show = (feed: Feed, call: number) => void;

/** The page's notifications for one feed's waiting confirmations. */
export class Notifier {
  constructor(
    private readonly feed: Feed,
    private readonly who: () => string | null,
    private readonly show: Show
  ) {
    feed.changed.connect(this._update, this);
  }

  private _update(): void {
    const waiting = new Set(this.feed.pending.map(p => p.id));
    for (const pending of this.feed.pending) {
      if (!this._shown.has(pending.id)) {
        this._shown.set(pending.id, this._emit(pending));
      }
    }
    for (const [call, id] of [...this._shown]) {
      const row = this.feed.rows.get(call);
      if (waiting.has(call) || (!row?.decided && this.feed.connected)) {
        continue; // still waiting, or its row (who decided) is yet to come
      }
      this._shown.delete(call);
      const decided = row?.decided ?? 'decided';
      Notification.update({
        id,
        message: `MCP call #${call} ${row?.target ?? ''}: ${decided}.`,
        type: decided.startsWith('approved') ? 'success' : 'info',
        actions: [],
        autoClose: 6000
      });
    }
  }

  private _emit(pending: IPending): string {
    const left = Math.round(secondsLeft(pending));
    const message =
      `${pending.client} asks to run ${pending.tool} (call #${pending.id}` +
      `${pending.hints.length ? ', ' + pending.hints.join(', ') : ''}). ` +
      `Unanswered, it is denied after ${left} s.`;
    const decide = (approve: boolean) => (event: MouseEvent) => {
      event.preventDefault(); // the notification stays until the kernel says who decided
      void this.feed.decide(pending.id, approve, 'notification', this.who()).then(answer => {
        if (!answer.ok) {
          Notification.warning(`MCP call #${pending.id}: ${answer.error ?? 'not decided'}.`, {
            autoClose: 8000
          });
        }
      });
    };
    return Notification.emit(message, 'warning', {
      autoClose: false,
      actions: [
        { label: 'Approve', callback: decide(true), displayType: 'accent', caption: 'Run it with these arguments' },
        { label: 'Deny', callback: decide(false), displayType: 'warn', caption: 'The client is told the user declined' },
        {
          label: 'Show',
          callback: event => {
            event.preventDefault();
            this.show(this.feed, pending.id);
          },
          displayType: 'link',
          caption: 'The arguments, in the MCP panel'
        }
      ]
    });
  }

  dispose(): void {
    this.feed.changed.disconnect(this._update, this);
  }

  private _shown = new Map<number, string>(); // call id -> notification id
}

/** The status-bar item: the current notebook's server, its clients, calls per minute,
 * errors since the panel was last looked at, and the confirmations that wait. */
export class StatusItem extends Widget {
  constructor(private readonly onClick: () => void) {
    super({ node: document.createElement('div') });
    this.addClass('mcp-status-item');
    this.node.title = 'The MCP server of this notebook: click to open the MCP panel';
    this.node.addEventListener('click', () => {
      this.seen();
      this.onClick();
    });
    this._timer = window.setInterval(() => this.render(), 5000);
  }

  /** Follow this notebook's feed (null: none, the item hides). */
  follow(feed: Feed | null): void {
    if (this._feed === feed) {
      return;
    }
    this._feed?.changed.disconnect(this.render, this);
    this._feed = feed;
    feed?.changed.connect(this.render, this);
    this._seenAt = 0;
    this.render();
  }

  /** Errors are counted from now on. */
  seen(): void {
    const rows = this._feed ? [...this._feed.rows.values()] : [];
    this._seenAt = rows.length ? rows[rows.length - 1].id : 0;
    this.render();
  }

  render(): void {
    const feed = this._feed;
    const state = feed?.state;
    if (!feed || !state) {
      this.node.textContent = '';
      this.node.style.display = 'none';
      return;
    }
    this.node.style.display = '';
    const parts = ['MCP', state.running ? 'serving' : 'stopped'];
    const clients = state.clients.length;
    parts.push(`${clients} client${clients === 1 ? '' : 's'}`);
    const since = Date.now() / 1000 - 60;
    let perMinute = 0;
    let errors = 0;
    for (const row of feed.rows.values()) {
      if (row.time >= since) {
        perMinute++;
      }
      if (row.id > this._seenAt && (row.status === 'error' || row.status === 'interrupted')) {
        errors++;
      }
    }
    parts.push(`${perMinute}/min`);
    if (errors) {
      parts.push(`${errors} error${errors === 1 ? '' : 's'}`);
    }
    const waiting = feed.pending.length;
    if (waiting) {
      parts.push(`${waiting} waiting`);
    }
    this.node.textContent = parts.join(' · ');
    this.toggleClass('mcp-status-waiting', waiting > 0);
    this.toggleClass('mcp-status-errors', errors > 0);
  }

  dispose(): void {
    window.clearInterval(this._timer);
    this._feed?.changed.disconnect(this.render, this);
    super.dispose();
  }

  private _feed: Feed | null = null;
  private _seenAt = 0;
  private _timer: number;
}
