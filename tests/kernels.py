"""Drive a real ipykernel through jupyter_client, the way a front end does."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

from jupyter_client.manager import start_new_kernel

from tests.waiting import until


class KernelError(AssertionError):
    def __init__(self, content: dict[str, Any]) -> None:
        self.ename = content.get("ename")
        self.evalue = content.get("evalue")
        self.traceback = "\n".join(content.get("traceback") or [])
        super().__init__(f"{self.ename}: {self.evalue}\n{self.traceback}")


class Kernel:
    def __init__(self) -> None:
        self.manager, self.client = start_new_kernel(kernel_name="python3", startup_timeout=60)

    def run(self, code: str, timeout: float = 60, **kwargs: Any) -> tuple[dict[str, Any], str]:
        """Execute ``code``; return the reply and everything it printed. Raise on an error."""
        reply, output = self.try_run(code, timeout=timeout, **kwargs)
        if reply["content"]["status"] != "ok":
            raise KernelError(reply["content"])
        return reply, output

    def try_run(self, code: str, timeout: float = 60, **kwargs: Any):
        chunks: list[str] = []

        def collect(message: dict[str, Any]) -> None:
            content = message["content"]
            if message["msg_type"] == "stream":
                chunks.append(content["text"])
            elif message["msg_type"] in ("execute_result", "display_data"):
                chunks.append(content["data"].get("text/plain", "") + "\n")

        reply = self.client.execute_interactive(
            code, output_hook=collect, timeout=timeout, **kwargs
        )
        return reply, "".join(chunks)

    def eval(self, expression: str) -> Any:
        """The value of a Python-literal expression evaluated in the kernel."""
        reply, _ = self.run("", user_expressions={"value": f"repr({expression})"})
        value = reply["content"]["user_expressions"]["value"]
        if value["status"] != "ok":
            raise KernelError(value)
        return ast.literal_eval(ast.literal_eval(value["data"]["text/plain"]))

    def alive(self) -> bool:
        return self.manager.is_alive()

    def crash_and_restart(self) -> None:
        """Kill the kernel as a crash would, then start a new one.

        ``restart_kernel(now=True)`` alone sends SIGINT before SIGKILL, so a tool call in
        flight may end as "interrupted" first; a crash gives no such warning.
        """
        process = self.manager.provisioner.process
        process.kill()
        process.wait(timeout=30)
        self.manager.restart_kernel(now=True)

    def shutdown(self) -> None:
        self.client.stop_channels()
        self.manager.shutdown_kernel(now=True)


async def until_exists(path: Path, timeout: float = 60) -> None:
    """Wait until a tool running in a kernel has written ``path`` (its sign that it started)."""
    await until(path.exists, f"{path.name} to appear", timeout)
