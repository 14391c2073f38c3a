"""ipywidgets for the notebook: the call monitor and confirmation prompts.

``hub.Hub`` wires them to the core through its two interfaces: the call log's observers
(``CallLog.subscribe``) and the confirmation hook (``Server.confirm``, see
``confirmer.Confirmer``). ``confirmer`` and ``decision`` import no widgets, so plain
scripts and headless serving use them too; the widget modules are imported by the kernel
extension only.
"""
