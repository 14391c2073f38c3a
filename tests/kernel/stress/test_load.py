"""64 keep-alive clients call tools at once: every reply comes, with its own id and payload,
while a ping loop and a second session keep being answered."""

from __future__ import annotations

import statistics
import threading
import time
from collections.abc import Callable
from typing import Any

from tests.conftest import Served
from tests.kernel.stress.client import KeepAlive

CLIENTS = 64
CALLS_PER_CLIENT = 150


class Tally:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.answered = self.lost = self.mismatched = 0
        self.problems: list[str] = []

    def add(self, answered: int = 0, lost: int = 0, mismatched: int = 0, problem: str = "") -> None:
        with self.lock:
            self.answered += answered
            self.lost += lost
            self.mismatched += mismatched
            if problem and len(self.problems) < 10:
                self.problems.append(problem)


def load_client(served: Served, index: int, start: threading.Barrier, tally: Tally) -> None:
    client = KeepAlive(served).open_session()
    start.wait()
    try:
        for seq in range(CALLS_PER_CLIENT):
            try:
                text = client.tool("echo", client=index, seq=seq)
            except AssertionError as exc:  # a reply, but not this request's
                tally.add(mismatched=1, problem=repr(exc)[:200])
                continue
            except OSError as exc:  # no reply: timed out or the connection broke
                tally.add(lost=1, problem=repr(exc)[:200])
                session = client.headers["Mcp-Session-Id"]
                client.close()
                client = KeepAlive(served)
                client.headers["Mcp-Session-Id"] = session
                continue
            if text == f"{index}:{seq}":
                tally.add(answered=1)
            else:
                tally.add(mismatched=1, problem=f"{index}:{seq} got {text!r}")
    finally:
        client.close()


def test_64_clients_get_every_reply_while_ping_and_a_second_session_answer(
    served: Served, figures: dict[str, Any]
) -> None:
    pinger = KeepAlive(served).open_session()
    second = KeepAlive(served).open_session()
    tally = Tally()
    start = threading.Barrier(CLIENTS + 1)
    done = threading.Event()
    ping_ms: list[float] = []
    second_answers: list[int] = []
    failures: list[BaseException] = []

    def keep_going(step: Callable[[], None]) -> Callable[[], None]:
        def loop() -> None:
            try:
                while not done.is_set():
                    step()
            except BaseException as exc:
                failures.append(exc)

        return loop

    def ping() -> None:
        began = time.perf_counter()
        assert pinger.call("ping")["result"] == {}
        ping_ms.append((time.perf_counter() - began) * 1000)

    def second_session() -> None:
        names = [t["name"] for t in second.call("tools/list")["result"]["tools"]]
        assert "echo" in names
        seq = len(second_answers)
        assert second.tool("echo", client=-1, seq=seq) == f"-1:{seq}"
        second_answers.append(seq)

    clients = [
        threading.Thread(target=load_client, args=(served, i, start, tally), daemon=True)
        for i in range(CLIENTS)
    ]
    for thread in clients:
        thread.start()
    start.wait()
    began = time.perf_counter()
    side = [threading.Thread(target=keep_going(f), daemon=True) for f in (ping, second_session)]
    for thread in side:
        thread.start()
    for thread in clients:
        thread.join(300)
    seconds = time.perf_counter() - began
    done.set()
    for thread in side:
        thread.join(60)
    pinger.close()
    second.close()

    total = CLIENTS * CALLS_PER_CLIENT
    ping_ms.sort()
    figures["load"] = {
        "clients": CLIENTS,
        "calls": total,
        "seconds": round(seconds, 2),
        "calls_per_s": round(total / seconds),
        "lost": tally.lost,
        "mismatched": tally.mismatched,
        "pings": len(ping_ms),
        "ping_p50_ms": round(statistics.median(ping_ms), 2) if ping_ms else None,
        "ping_p99_ms": round(ping_ms[int(len(ping_ms) * 0.99)], 2) if ping_ms else None,
        "second_session_calls": len(second_answers),
    }
    assert not any(t.is_alive() for t in clients + side), "a client never finished"
    assert (tally.lost, tally.mismatched) == (0, 0), tally.problems
    assert tally.answered == total
    assert not failures, failures
    assert ping_ms, "ping was never answered during the load"
    assert second_answers, "the second session was never answered during the load"
