/**
 * The MCP panel's and status item's look, from the JupyterLab theme's variables only: the
 * same rules serve the light and the dark theme.
 */
export const CSS = `
.mcp-panel { display: flex; flex-direction: column; overflow: auto; min-width: 240px;
  container-type: inline-size; container-name: mcp-panel;
  background: var(--jp-layout-color1); color: var(--jp-ui-font-color1);
  font-size: var(--jp-ui-font-size1); }
.mcp-panel .mcp-section { padding: 6px 8px; border-bottom: var(--jp-border-width) solid var(--jp-border-color2); }
.mcp-panel .mcp-section-title { font-weight: 600; margin: 2px 0; cursor: default; }
.mcp-panel .mcp-title { display: flex; align-items: center; gap: 8px; font-size: var(--jp-ui-font-size2); }
.mcp-panel .mcp-badge { border-radius: 8px; padding: 0 6px; font-size: var(--jp-ui-font-size0);
  color: var(--jp-ui-inverse-font-color1); }
.mcp-panel .mcp-running { background: var(--jp-success-color1); }
.mcp-panel .mcp-stopped { background: var(--jp-layout-color4); }
.mcp-panel .mcp-facts, .mcp-panel .mcp-timing, .mcp-panel .mcp-note, .mcp-panel .mcp-empty {
  color: var(--jp-ui-font-color2); margin: 2px 0; }
.mcp-panel .mcp-url, .mcp-panel .mcp-token { display: flex; align-items: center; gap: 6px; margin: 2px 0; }
.mcp-panel .mcp-url code { overflow-wrap: anywhere; flex: 1 1 auto; }
.mcp-panel code, .mcp-panel .mcp-mono { font-family: var(--jp-code-font-family); font-size: var(--jp-code-font-size); }
.mcp-panel .mcp-button { height: 22px; line-height: 20px; padding: 0 8px; margin-right: 4px; }
.mcp-panel .mcp-small { height: 18px; line-height: 16px; font-size: var(--jp-ui-font-size0); }
.mcp-panel .mcp-client { padding: 1px 0; overflow-wrap: break-word; }
.mcp-panel .mcp-registration { display: flex; gap: 6px; align-items: baseline; padding: 1px 0; }
.mcp-panel .mcp-kind { font-size: var(--jp-ui-font-size0); color: var(--jp-ui-font-color2); min-width: 56px; }
.mcp-panel .mcp-reg-name { color: var(--jp-content-link-color); cursor: pointer; }
.mcp-panel .mcp-reg-about { color: var(--jp-ui-font-color2); overflow: hidden; text-overflow: ellipsis; white-space: nowrap; }
.mcp-panel .mcp-card { border: 2px solid var(--jp-warn-color1); border-radius: 4px; padding: 6px; margin: 4px 0;
  background: var(--jp-layout-color2); }
.mcp-panel .mcp-card textarea { width: 100%; box-sizing: border-box; margin: 4px 0; resize: vertical; }
.mcp-panel .mcp-card-about { color: var(--jp-ui-font-color2); font-style: italic; }
.mcp-panel .mcp-card-actions { display: flex; align-items: center; gap: 6px; flex-wrap: wrap; }
.mcp-panel .mcp-countdown { color: var(--jp-warn-color0); font-variant-numeric: tabular-nums; }
.mcp-panel .mcp-error-text { color: var(--jp-error-color1); }
.mcp-panel .mcp-calls { display: flex; flex-direction: column; flex: 1 1 auto; min-height: 260px; }
.mcp-panel .mcp-filters { display: flex; gap: 4px; align-items: center; flex-wrap: wrap; margin-bottom: 4px; }
.mcp-panel .mcp-filters select, .mcp-panel .mcp-search { height: 24px; font-size: var(--jp-ui-font-size1);
  flex: 1 1 30%; min-width: 0; width: auto; }
.mcp-panel .mcp-search { flex: 1 1 60%; padding: 0 6px; }
.mcp-panel .mcp-count { color: var(--jp-ui-font-color2); }
.mcp-panel .mcp-calls-scroll { position: relative; overflow-y: auto; height: 300px; flex: 1 1 auto;
  border: var(--jp-border-width) solid var(--jp-border-color2); }
.mcp-panel .mcp-calls-spacer { position: relative; }
.mcp-panel .mcp-call { display: grid; grid-template-columns: 18px 64px minmax(0, 1fr) 72px minmax(0, 1.4fr)
  minmax(0, 1.6fr) 52px minmax(0, 1.2fr); gap: 4px; align-items: center; height: 24px;
  padding: 0 4px; box-sizing: border-box; white-space: nowrap; }
@container mcp-panel (max-width: 640px) {
  /* Narrow (the side area's usual width): time, target, duration and status; the client,
     method and arguments are in the search, the filters and the detail pane. */
  .mcp-panel .mcp-call { grid-template-columns: 16px 60px minmax(0, 1.3fr) 44px minmax(0, 1fr); gap: 3px; }
  .mcp-panel .mcp-call .mcp-c-client, .mcp-panel .mcp-call .mcp-c-method,
  .mcp-panel .mcp-call .mcp-c-args { display: none; }
}
.mcp-panel .mcp-calls-spacer .mcp-call { position: absolute; left: 0; right: 0; cursor: pointer;
  border-left: 3px solid transparent; }
.mcp-panel .mcp-call > span { overflow: hidden; text-overflow: ellipsis; }
.mcp-panel .mcp-calls-head { color: var(--jp-ui-font-color2); font-weight: 600; }
.mcp-panel .mcp-calls-spacer .mcp-call:hover { background: var(--jp-layout-color2); }
.mcp-panel .mcp-call.mcp-selected { background: color-mix(in srgb, var(--jp-brand-color1) 22%, transparent); }
.mcp-panel .mcp-c-args { font-family: var(--jp-code-font-family); font-size: var(--jp-code-font-size); }
.mcp-panel .mcp-c-took, .mcp-panel .mcp-c-time { font-variant-numeric: tabular-nums; }
.mcp-panel .mcp-c-took { text-align: right; }
.mcp-panel .mcp-call-icon { display: flex; }
.mcp-panel .mcp-burst { display: inline-block; margin-right: 4px; padding: 0 4px; border-radius: 6px;
  background: var(--jp-layout-color3); color: var(--jp-ui-font-color1); font-size: var(--jp-ui-font-size0); }
.mcp-s-done { --mcp-status: var(--jp-success-color1); }
.mcp-s-error { --mcp-status: var(--jp-error-color1); }
.mcp-s-denied { --mcp-status: var(--jp-error-color2); }
.mcp-s-interrupted { --mcp-status: var(--jp-warn-color0); }
.mcp-s-cancelled { --mcp-status: var(--jp-ui-font-color3); }
.mcp-s-dropped { --mcp-status: var(--jp-ui-font-color3); }
.mcp-s-paused { --mcp-status: var(--jp-info-color0); }
.mcp-s-awaiting { --mcp-status: var(--jp-warn-color1); }
.mcp-s-behind { --mcp-status: var(--jp-info-color2); }
.mcp-s-queued { --mcp-status: var(--jp-ui-font-color2); }
.mcp-s-running { --mcp-status: var(--jp-brand-color1); }
.mcp-panel .mcp-calls-spacer .mcp-call { border-left-color: var(--mcp-status); }
.mcp-panel .mcp-call .mcp-c-status, .mcp-panel .mcp-detail-head .mcp-c-status { color: var(--mcp-status); }
.mcp-panel .mcp-call .mcp-call-icon svg, .mcp-panel .mcp-call .mcp-call-icon svg path,
.mcp-panel .mcp-call .mcp-call-icon svg .jp-icon3 { fill: var(--mcp-status); }
.mcp-panel .mcp-s-error .mcp-c-status, .mcp-panel .mcp-s-denied .mcp-c-status { font-weight: 600; }
.mcp-panel .mcp-s-awaiting { background: color-mix(in srgb, var(--jp-warn-color1) 12%, transparent); }
.mcp-panel .mcp-detail { max-height: 45%; overflow: auto; }
.mcp-panel .mcp-detail pre { white-space: pre-wrap; word-break: break-word; margin: 2px 0;
  background: var(--jp-layout-color2); padding: 4px; }
.mcp-panel .mcp-part-title { font-weight: 600; margin-top: 4px; cursor: pointer; }
.mcp-panel .mcp-decided { color: var(--jp-ui-font-color1); }
.mcp-panel .mcp-actions { margin-top: 6px; display: flex; gap: 4px; flex-wrap: wrap; }
.mcp-panel .mcp-pause.mcp-on { outline: 2px solid var(--jp-info-color1); }
.mcp-status-item { padding: 0 6px; cursor: pointer; }
.mcp-status-item.mcp-status-errors { color: var(--jp-error-color1); }
.mcp-status-item.mcp-status-waiting { background: var(--jp-warn-color1); color: var(--jp-ui-inverse-font-color1);
  font-weight: 600; }
`;

/** Put the rules in the page, once. */
export function addStyle(): void {
  if (!document.getElementById('mcp-notebook-style')) {
    const style = document.createElement('style');
    style.id = 'mcp-notebook-style';
    style.textContent = CSS;
    document.head.appendChild(style);
  }
}
