"""Which interceptors a server's ``tools/call`` meets, and in which order.

The order (outermost first; :mod:`.interceptors` says what each stage sees)::

    before the record: dispatcher tools, visibility, [plugged], task mode, resumption
    around the run:    [plugged], tasks, confirmation (while a hook is set), wait notices

Plugged interceptors (:meth:`ToolChain.plug`): before the record, authorization, which
sees the tool that is to run (a call through the dispatcher's ``call_notebook_tool``
too, and a resumed round); around the run, tracing, outermost: it sees every recorded
call to its end, a task's handle or an input-required round included. The chain is
composed here and handed to the core (:meth:`~.toolcalls.ToolCalls.use`) whenever a
feature is switched on or off.
"""

from __future__ import annotations

from collections.abc import Callable

from .confirmation import Confirm, Confirmation
from .dispatcher_tools import DispatcherTools
from .interceptors import Interceptor
from .request import RequestContext
from .rounds import Resumption, Rounds
from .taskcalls import TaskCalls
from .toolcalls import ToolCalls
from .visibility import visible
from .waits import WaitNotices


class ToolChain:
    """The features of one server's tool calls, composed into its core's chain."""

    def __init__(
        self,
        core: ToolCalls,
        tasks: TaskCalls,
        rounds: Rounds,
        offers_dispatcher: Callable[[RequestContext], bool],
    ) -> None:
        self.core, self.tasks = core, tasks
        self.dispatcher = DispatcherTools(core.registry, core.calls, offers_dispatcher)
        self.resumption = Resumption(rounds, tasks)
        self.waits = WaitNotices(core.executor)
        self._confirm: Confirm | None = None
        self._plugged: dict[bool, list[Interceptor]] = {True: [], False: []}
        self.compose()

    @property
    def confirm(self) -> Confirm | None:
        return self._confirm

    @confirm.setter
    def confirm(self, confirm: Confirm | None) -> None:
        self._confirm = confirm
        self.compose()

    def plug(self, interceptor: Interceptor, before_record: bool) -> None:
        if interceptor in self._plugged[before_record]:
            return  # a transport started again plugs its checks again: once is enough
        self._plugged[before_record].insert(0, interceptor)
        self.compose()

    def compose(self) -> None:
        before: list[Interceptor] = [self.dispatcher, visible, *self._plugged[True]]
        before += [self.tasks.mode, self.resumption]
        around: list[Interceptor] = [*self._plugged[False], self.tasks.run]
        if self._confirm is not None:
            around.append(Confirmation(self._confirm))
        around.append(self.waits)
        self.core.use(before, around)
