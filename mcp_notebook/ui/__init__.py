"""ipywidgets for the notebook: the call monitor, confirmation prompts and the trace.

``hub.Hub`` wires them to the core through the interfaces the core offers: the call log's
observers (``CallLog.subscribe``), the confirmation hook (``Server.confirm``, see
``protocol/confirmation.py``: ``Hub.ask`` is the person at the notebook) and the server's
message taps (``Server.add_tap``, for ``trace.Trace``). ui/ imports neither ``kernel/``
nor ``app``: whoever builds the Hub (the kernel extension) gives it what it needs from
there (headless or not, the capturing executor, replay). ``decision``, ``trace`` and
``render`` import no widgets; the widget modules are imported by the kernel extension only.
"""
