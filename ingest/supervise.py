"""Supervision: every thread and task of ``collect`` and ``run`` is watched, restarted when
it dies, and reported truthfully ("Supervision and honest status").

A :class:`Component` is one long-running piece of work: a thread (the MQTT network loop,
the collector's flusher, the Modbus loop, the writer) or an asyncio task (the evaluator,
the alert timers). Its body calls :meth:`Component.beat` as it goes round; the
:class:`Supervisor`'s watchdog thread then knows it is alive and not stuck:

* a thread that dies (an exception escapes its body, or it returns while not asked to
  stop) is started again after a backoff (0.5 s doubling to 30 s; back to 0.5 s once it has
  run a minute), and the death and the restart are events;
* a component that has not beaten for ``stall_after`` seconds is *stalled* (an event; a
  Python thread cannot be killed, so it is reported, not restarted);
* a component may add a ``check`` of its own (the broker connection, the spool), whose
  failure makes it unhealthy with the reason.

Events go to ``on_event(event, component, detail)`` (``died``, ``restarted``, ``stalled``,
``recovered``); ``sewerwatch run`` turns them into "sewerwatch degraded" alerts. The
traceback of a death is logged once per kind (component, exception type and place), later
ones in one line. :meth:`Supervisor.snapshot` is what ``sewerwatch status`` shows: it never
calls a component healthy that is dead, stalled or failing its check.

Tests inject a death with :meth:`Supervisor.inject`: the component's next beat raises.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
import traceback
from typing import Callable

log = logging.getLogger("sewerwatch.supervise")

#: A restarted component's first wait [s], doubled per death up to :data:`BACKOFF_MAX`.
BACKOFF_MIN = 0.5
BACKOFF_MAX = 30.0
#: After running this long [s] a component's backoff starts again from the minimum.
BACKOFF_RESET_AFTER = 60.0


class InjectedFault(RuntimeError):
    """The exception :meth:`Supervisor.inject` raises inside a component (tests, drills)."""


class Component:
    """One supervised thread or task.

    Parameters
    ----------
    name : str
        Shown in ``sewerwatch status`` (``mqtt-network``, ``writer``, ...).
    target : callable or None
        A thread's body, called as ``target(component)``; None for an asyncio task (see
        :func:`supervise_task`).
    stall_after : float, optional
        Seconds without a beat after which the component is stalled.
    check : callable, optional
        ``check() -> str | None``: a problem in words, or None when all is well.
    """

    def __init__(self, supervisor: "Supervisor", name: str, target: Callable | None, *,
                 stall_after: float | None = None, check: Callable[[], str | None] | None = None):
        self.supervisor, self.name, self.target = supervisor, name, target
        self.kind = "thread" if target is not None else "task"
        self.stall_after, self.check = stall_after, check
        self.restarts = 0
        self.last_error: str | None = None
        self.last_error_at: float | None = None
        self.started_at: float | None = None        # [epoch s]
        self.last_beat = time.monotonic()
        self.stalled = False
        self.thread: threading.Thread | None = None
        self.task_alive = False
        self.finished = False                       # stopped on request: not restarted
        self._inject: BaseException | None = None
        self._backoff = BACKOFF_MIN
        self._next_restart: float | None = None
        self._up_since = time.monotonic()

    # -- inside the component ---------------------------------------------------------

    def beat(self) -> None:
        """I am alive and going round (raises an injected fault, if any)."""
        self.last_beat = time.monotonic()
        if self._inject is not None:
            exc, self._inject = self._inject, None
            raise exc

    @property
    def stopping(self) -> bool:
        """Whether the supervisor is stopping (bodies return when they see it)."""
        return self.supervisor.stopping.is_set()

    def sleep(self, seconds: float) -> bool:
        """Sleep up to ``seconds``, beating; True when stopping."""
        end = time.monotonic() + seconds
        while True:
            self.beat()
            left = end - time.monotonic()
            if left <= 0:
                return self.stopping
            if self.supervisor.stopping.wait(min(left, 1.0)):
                return True

    # -- state ------------------------------------------------------------------------

    @property
    def alive(self) -> bool:
        if self.kind == "thread":
            return self.thread is not None and self.thread.is_alive()
        return self.task_alive

    def problem(self, now: float | None = None) -> str | None:
        """Why this component is not healthy, or None."""
        if not self.alive:
            if self.finished:
                return "stopped"
            return f"dead ({self.last_error or 'not running'}); restart {self._restart_in(now)}"
        if self.stalled:
            return f"stalled: no progress for {time.monotonic() - self.last_beat:.0f} s"
        if self.check is not None:
            try:
                return self.check()
            except Exception as exc:  # noqa: BLE001 - a failing check is a problem, not a crash
                return f"health check failed: {type(exc).__name__}: {exc}"
        return None

    def _restart_in(self, now: float | None) -> str:
        if self._next_restart is None:
            return "pending"
        left = self._next_restart - (now if now is not None else time.monotonic())
        return f"in {max(left, 0):.1f} s"

    def snapshot(self) -> dict:
        now = time.monotonic()
        problem = self.problem(now)
        return {"kind": self.kind, "alive": self.alive, "healthy": problem is None, "problem": problem,
                "restarts": self.restarts, "last_error": self.last_error, "last_error_at": self.last_error_at,
                "since_beat_s": round(now - self.last_beat, 3), "started_at": self.started_at}

    # -- life -------------------------------------------------------------------------

    def _started(self) -> None:
        self.started_at = time.time()
        self.last_beat = self._up_since = time.monotonic()
        self.stalled = False

    def died(self, exc: BaseException | None) -> None:
        """Record a death (``exc`` None: the body returned while not asked to stop)."""
        what = f"{type(exc).__name__}: {exc}" if exc is not None else "returned while not asked to stop"
        self.last_error, self.last_error_at = what[:500], time.time()
        now = time.monotonic()
        if now - self._up_since >= BACKOFF_RESET_AFTER:
            self._backoff = BACKOFF_MIN
        self._next_restart = now + self._backoff
        self._backoff = min(self._backoff * 2, BACKOFF_MAX)
        self.supervisor.log_death(self, exc)
        self.supervisor.event("died", self, f"{self.name} died: {what}")

    def restart_delay(self) -> float:
        """Seconds until the component may start again (tasks wait this themselves)."""
        return 0.0 if self._next_restart is None else max(0.0, self._next_restart - time.monotonic())

    def _run_thread(self) -> None:
        self._started()
        try:
            self.target(self)
        except BaseException as exc:  # noqa: BLE001 - every death is recorded and the thread restarted
            if not (self.stopping or self.finished):
                self.died(exc)
            return
        if not (self.stopping or self.finished):
            self.died(None)

    def _start_thread(self) -> None:
        self.thread = threading.Thread(target=self._run_thread, name=f"sewerwatch-{self.name}", daemon=True)
        self.thread.start()


class Supervisor:
    """Starts components, watches them, restarts the dead ones and tells ``on_event``.

    Parameters
    ----------
    on_event : callable, optional
        ``on_event(event, component, detail)``, called from the watchdog (or the dying)
        thread; must be quick and thread-safe.
    poll_s : float
        How often the watchdog looks [s].
    """

    def __init__(self, on_event: Callable[[str, Component, str], None] | None = None, poll_s: float = 0.2):
        self.on_event = on_event
        self.poll_s = poll_s
        self.components: dict[str, Component] = {}
        self.stopping = threading.Event()
        self.events: list[tuple[float, str, str, str]] = []     # (epoch s, event, component, detail), last 100
        self._logged_kinds: set = set()
        self._lock = threading.Lock()
        self._adding = threading.Lock()      # add() and start() one at a time
        self._watchdog: threading.Thread | None = None

    def add(self, name: str, target: Callable[[Component], None] | None = None, *,
            stall_after: float | None = None, check: Callable[[], str | None] | None = None) -> Component:
        """Register a thread (``target``) or a task (no target); a thread starts with :meth:`start`,
        or at once when the supervisor runs already. The watchdog sees a thread only once it
        runs: registered first, it looked dead until its thread started ("returned while not
        asked to stop"), and was started a second time."""
        comp = Component(self, name, target, stall_after=stall_after, check=check)
        with self._adding:
            if target is not None and self._watchdog is not None:
                comp._start_thread()
            self.components[name] = comp
        return comp

    def start(self) -> "Supervisor":
        with self._adding:
            for comp in self.components.values():
                if comp.kind == "thread" and comp.thread is None:
                    comp._start_thread()
            self._watchdog = threading.Thread(target=self._watch, name="sewerwatch-watchdog", daemon=True)
            self._watchdog.start()
        return self

    def stop(self) -> None:
        """No more restarts; bodies see :attr:`Component.stopping` and return."""
        self.stopping.set()
        for comp in self.components.values():
            comp.finished = True
        if self._watchdog is not None:
            self._watchdog.join(5)

    def inject(self, name: str, exc: BaseException | None = None) -> None:
        """Make component ``name`` raise ``exc`` (default :class:`InjectedFault`) at its next beat."""
        self.components[name]._inject = exc or InjectedFault(f"fault injected into {name}")

    def snapshot(self) -> dict:
        """``{name: {kind, alive, healthy, problem, restarts, last_error, ...}}``."""
        return {name: comp.snapshot() for name, comp in self.components.items()}

    def problems(self) -> dict[str, str]:
        """``{name: problem}`` of every component that is not healthy (one stopped on
        request is not a problem)."""
        out = {}
        for name, comp in self.components.items():
            if comp.finished:
                continue
            p = comp.problem()
            if p is not None:
                out[name] = p
        return out

    # -- internals ----------------------------------------------------------------------

    def event(self, event: str, comp: Component, detail: str) -> None:
        with self._lock:
            self.events.append((time.time(), event, comp.name, detail))
            del self.events[:-100]
        if event in ("died", "stalled"):
            log.error("%s", detail)
        else:
            log.warning("%s", detail)
        if self.on_event is not None:
            try:
                self.on_event(event, comp, detail)
            except Exception:  # noqa: BLE001 - reporting must never stop the watchdog
                log.exception("reporting the %s of %s failed", event, comp.name)

    def log_death(self, comp: Component, exc: BaseException | None) -> None:
        """The traceback once per kind (component, exception type, place); later one line."""
        if exc is None:
            return
        tb = traceback.extract_tb(exc.__traceback__)
        where = (tb[-1].filename, tb[-1].lineno) if tb else ("", 0)
        kind = (comp.name, type(exc).__name__, where)
        with self._lock:
            first = kind not in self._logged_kinds
            self._logged_kinds.add(kind)
        if first:
            log.error("%s died; traceback (logged once for this kind):\n%s", comp.name,
                      "".join(traceback.format_exception(type(exc), exc, exc.__traceback__)).rstrip())

    def _watch(self) -> None:
        while not self.stopping.wait(self.poll_s):
            now = time.monotonic()
            for comp in list(self.components.values()):
                try:
                    self._look_at(comp, now)
                except Exception:  # noqa: BLE001 - the watchdog itself must not die
                    log.exception("watchdog: looking at %s failed", comp.name)

    def _look_at(self, comp: Component, now: float) -> None:
        if comp.kind == "thread" and not comp.alive and not comp.finished and not self.stopping.is_set():
            if comp._next_restart is None:          # it ended without a recorded death
                comp.died(None)
            if now >= comp._next_restart:
                comp._next_restart = None
                comp.restarts += 1
                self.event("restarted", comp, f"{comp.name} restarted (restart {comp.restarts}; "
                                              f"last error: {comp.last_error})")
                comp._start_thread()
            return
        if comp.alive and comp.stall_after is not None:
            quiet = now - comp.last_beat
            if not comp.stalled and quiet > comp.stall_after:
                comp.stalled = True
                self.event("stalled", comp, f"{comp.name} stalled: no progress for {quiet:.0f} s")
            elif comp.stalled and quiet <= comp.stall_after:
                comp.stalled = False
                self.event("recovered", comp, f"{comp.name} is making progress again")


async def supervise_task(comp: Component, body: Callable, stop: asyncio.Event) -> None:
    """Run ``await body(comp)`` as component ``comp`` until ``stop`` is set; a death is
    recorded and the body started again after the backoff.

    ``body`` returns when ``stop`` is set (returning earlier counts as a death).
    """
    while True:
        comp.task_alive = True
        comp._started()
        try:
            await body(comp)
            exc = None
        except asyncio.CancelledError:
            comp.task_alive = False
            raise
        except Exception as e:  # noqa: BLE001 - every death is recorded and the task restarted
            exc = e
        comp.task_alive = False
        if stop.is_set():
            comp.finished = True
            return
        comp.died(exc)
        try:
            await asyncio.wait_for(stop.wait(), comp.restart_delay())
            comp.finished = True
            return
        except asyncio.TimeoutError:
            pass
        comp.restarts += 1
        comp._next_restart = None
        comp.supervisor.event("restarted", comp, f"{comp.name} restarted (restart {comp.restarts}; "
                                                 f"last error: {comp.last_error})")
