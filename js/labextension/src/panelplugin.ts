/**
 * The plugin that gives each notebook its MCP panel, a status-bar item and a notification
 * for every confirmation that waits. A feed (feed.ts) is opened on every notebook's kernel
 * connection as soon as the kernel has mcp_notebook loaded, whether or not the panel is
 * shown: a waiting call must reach the person even with the panel closed and the notebook
 * scrolled away.
 */
import { JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import { ICommandPalette } from '@jupyterlab/apputils';
import { INotebookTracker, NotebookPanel } from '@jupyterlab/notebook';
import { Kernel } from '@jupyterlab/services';
import { IStatusBar } from '@jupyterlab/statusbar';
import { LabIcon, ToolbarButton } from '@jupyterlab/ui-components';
import { Feed, Feeds } from './feed';
import { McpPanel } from './panel';
import { Notifier, StatusItem } from './status';
import { addStyle } from './style';

/** This page's feeds, one per kernel connection (index.ts tells them of hellos). */
export const FEEDS = new Feeds();
export const OPEN_PANEL = 'mcp-notebook:open-panel';

const mcpIcon = new LabIcon({
  name: 'mcp-notebook:mcp',
  svgstr:
    '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 24 24"><g class="jp-icon3" fill="#616161">' +
    '<path d="M4 5h16v2H4zM4 11h10v2H4zM4 17h16v2H4z"/><circle cx="19" cy="12" r="2.5"/></g></svg>'
});

function kernelOf(panel: NotebookPanel | null): Kernel.IKernelConnection | null {
  return panel?.sessionContext.session?.kernel ?? null;
}

export const panelPlugin: JupyterFrontEndPlugin<void> = {
  id: 'mcp-notebook:panel',
  description: 'The MCP panel, a status-bar item and notifications for waiting confirmations.',
  autoStart: true,
  requires: [INotebookTracker],
  optional: [ICommandPalette, IStatusBar],
  activate: (
    app: JupyterFrontEnd,
    tracker: INotebookTracker,
    palette: ICommandPalette | null,
    statusBar: IStatusBar | null
  ): void => {
    addStyle();
    const who = () => app.serviceManager.user?.identity?.display_name ?? null;
    const panel = new McpPanel(who);
    panel.title.icon = mcpIcon;
    app.shell.add(panel, 'right', { rank: 650 });
    const status = new StatusItem(() => show());
    const show = () => {
      follow();
      app.shell.activateById(panel.id);
    };
    const follow = () => {
      const notebook = tracker.currentWidget;
      const kernel = kernelOf(notebook);
      const feed = kernel ? FEEDS.get(kernel) : null;
      panel.follow(feed, notebook);
      status.follow(feed);
    };
    app.commands.addCommand(OPEN_PANEL, {
      label: 'Show the MCP Panel',
      caption: "The notebook's MCP server, its clients, registrations and calls",
      icon: mcpIcon,
      execute: show
    });
    palette?.addItem({ command: OPEN_PANEL, category: 'MCP' });
    statusBar?.registerStatusItem('mcp-notebook:status', {
      item: status,
      align: 'left',
      rank: 5,
      isActive: () => true
    });
    app.docRegistry.addWidgetExtension('Notebook', {
      createNew: (notebook: NotebookPanel) => {
        const toolbarButton = new ToolbarButton({
          icon: mcpIcon,
          tooltip: 'Show the MCP panel',
          className: 'mcp-toolbar-button',
          onClick: () => {
            show();
          }
        });
        notebook.toolbar.insertItem(10, 'mcp-panel', toolbarButton);
        return toolbarButton;
      }
    });
    FEEDS.added.connect((_, feed: Feed) => {
      const notifier = new Notifier(feed, who, (shown, call) => {
        show();
        if (panel.feed === shown) {
          panel.showCard(call);
        }
      });
      feed.openRequested.connect(show);
      feed.kernel.disposed.connect(() => notifier.dispose());
    });
    const watch = (notebook: NotebookPanel) => {
      const kernel = kernelOf(notebook);
      if (kernel) {
        FEEDS.get(kernel);
      }
      notebook.sessionContext.kernelChanged.connect((_, change) => {
        if (change.newValue) {
          FEEDS.get(change.newValue);
        }
        if (tracker.currentWidget === notebook) {
          follow();
        }
      });
    };
    tracker.widgetAdded.connect((_, notebook) => watch(notebook));
    tracker.forEach(watch);
    tracker.currentChanged.connect(follow);
    follow();
  }
};
