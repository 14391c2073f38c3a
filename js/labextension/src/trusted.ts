/**
 * A confirmation card (mcp_notebook/ui/confirm.py: class `mcp-confirm`) answers only a
 * person. Script running in the page (markup that got rendered, another extension) can
 * call `button.click()` or dispatch key and input events; the browser marks every such
 * event `isTrusted: false`, and this plugin stops those aimed at a card before the
 * widget's own handlers hear them (a capture listener on the window runs first). Real
 * clicks, keys and typing are trusted and pass.
 *
 * Defence in depth only: script in JupyterLab's origin can still open its own kernel
 * connection and run code in the kernel (docs/security.md says so).
 */
import { JupyterFrontEndPlugin } from '@jupyterlab/application';

/** The confirmation card's class (confirm.py: ConfirmPanel). */
export const CARD = 'mcp-confirm';

/** What a person does to answer or edit a card: none of it may be faked by script. */
export const GUARDED_EVENTS = [
  'click',
  'dblclick',
  'auxclick',
  'mousedown',
  'mouseup',
  'pointerdown',
  'pointerup',
  'keydown',
  'keypress',
  'keyup',
  'beforeinput',
  'input',
  'change',
  'submit'
];

function inCard(event: Event): boolean {
  return event.composedPath().some(
    node => node instanceof Element && node.classList.contains(CARD)
  );
}

function refuse(event: Event): void {
  if (!event.isTrusted && inCard(event)) {
    event.stopImmediatePropagation();
    event.preventDefault();
  }
}

/** Stop untrusted events aimed at a confirmation card anywhere under `target`. */
export function refuseScriptedAnswers(target: EventTarget): void {
  for (const type of GUARDED_EVENTS) {
    target.addEventListener(type, refuse, { capture: true });
  }
}

export const trustedAnswers: JupyterFrontEndPlugin<void> = {
  id: 'mcp-notebook:trusted-answers',
  description: 'Lets only a person, not script in the page, answer a confirmation card.',
  autoStart: true,
  activate: (): void => {
    refuseScriptedAnswers(window);
    document.documentElement.dataset.mcpNotebookTrustedAnswers = 'on';
  }
};
