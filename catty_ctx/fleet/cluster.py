"""The Dask engine behind `--scheduler`: the per-session (per-file for usage) work as tasks.

`--scheduler ADDRESS` (or CATTY_CTX_SCHEDULER) connects to a running Dask scheduler;
`local` or `local:N` starts a LocalCluster of N worker processes for the one run. The work
function runs on the workers over batches of items; whatever it raises as a `CattyError`
(bad input) comes back as a value, the session and the problem, and the caller reports it
as the local run does. Dask reruns the tasks of a worker that died (and retries a task that
failed for another reason), so a lost worker costs time, never a result. Nothing here imports
Dask until a scheduler is asked for: the extra is optional and start-up time is measured.
"""
from __future__ import annotations

import functools
import os
import sys
import time
import warnings

from ..defaults import CONNECT_TIMEOUT
from ..errors import CattyError, ExitCode, UsageError
from .capture import capture_stderr
from .urlcopy import on_copy
from .workers import usable_cpus

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Iterator, Sequence
    from typing import Any

SCHEDULER_ENV = "CATTY_CTX_SCHEDULER"
EXTRA = "catty-ctx[dask]"
RETRIES = 3  # reruns of a task that raised something other than bad input
TASKS_PER_WORKER = 8  # batches per worker: enough to balance uneven sessions, few enough to keep the scheduler's cost small
MAX_BATCH = 256


class Unavailable(CattyError):
    """The scheduler cannot be reached, or the cluster lost the run."""

    exit_code = ExitCode.UNAVAILABLE


class RemoteBug(Exception):
    """A worker hit a bug in catty-ctx (not bad input): reported as the local run reports one."""


def scheduler_from(option: str | None) -> str | None:
    """The scheduler asked for: the option, else CATTY_CTX_SCHEDULER, else None (run here)."""
    spec = option if option is not None else os.environ.get(SCHEDULER_ENV)
    return spec.strip() or None if spec is not None else None


def parse_local(spec: str) -> int | None:
    """N for `local` or `local:N` (`local` alone: one worker per usable CPU); None for an address."""
    if spec == "local":
        return usable_cpus()
    if spec.startswith("local:"):
        n = spec[len("local:"):]
        if not (n.isascii() and n.isdigit() and int(n) >= 1):
            raise UsageError(f"--scheduler {spec}: use local:N with N >= 1 worker processes")
        return int(n)
    return None


def refuse_writes(command: str, allow: bool) -> None:
    """Writers run on a cluster only when asked to: the session lock is an flock, which some shared filesystems do not honour."""
    if not allow:
        raise UsageError(f"{command} writes sessions: on a cluster it needs --allow-remote-writes "
                         "(the session lock is flock, not honoured by every shared filesystem; see docs/fleet.md)")


def _import_distributed() -> Any:
    os.environ.setdefault("DASK_LOGGING__DISTRIBUTED", "error")  # (read at import, inherited by a LocalCluster's workers)
    try:
        import distributed
    except ImportError:
        raise UsageError(f"--scheduler needs Dask: install the extra {EXTRA}") from None
    import logging

    for name in ("distributed", "tornado", "asyncio"):
        logging.getLogger(name).setLevel(logging.CRITICAL)
    return distributed


def _run_batch(fn: Callable[..., Any], items: Sequence[Any], kwargs: dict[str, Any]) -> list[tuple[int, Any, str]]:
    """On a worker: FN over a batch; each outcome (0, value), (1, (message, exit code)) for bad input or (2, text) for a
    bug, with what the item wrote to stderr."""
    out: list[tuple[int, Any, str]] = []
    for item in items:
        with capture_stderr() as written:
            try:
                done: tuple[int, Any] = (0, fn(item, **kwargs))
            except CattyError as exc:
                done = (1, (str(exc), int(exc.exit_code)))
            except Exception as exc:
                done = (2, f"{type(exc).__name__}: {exc}")
        out.append((*done, "".join(written)))
    return out


def _outcome(kind: int, payload: Any, written: str) -> Any:
    if written:
        sys.stderr.write(written)
    if kind == 0:
        return payload
    if kind == 1:
        message, code = payload
        return CattyError(message, exit_code=ExitCode(code))
    raise RemoteBug(payload)


class Engine:
    """A connection to a Dask scheduler (or a LocalCluster of its own), made on first use."""

    def __init__(self, spec: str, connect_timeout: float = CONNECT_TIMEOUT) -> None:
        self.spec = spec
        self.local_workers = parse_local(spec)
        self.connect_timeout = connect_timeout
        self._client: Any = None
        self._cluster: Any = None

    def __enter__(self) -> Engine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def client(self) -> Any:
        if self._client is None:
            self._client = self._connect()
        return self._client

    def _connect(self) -> Any:
        start = time.monotonic()  # the timeout counts the import too: it is the user's wait that is bounded
        distributed = _import_distributed()

        ends = start + self.connect_timeout

        class Client(distributed.Client):  # type: ignore[name-defined]  # distributed is imported above, at run time
            async def _start(self, *args: Any, **kwargs: Any) -> Any:
                # Dask bounds the TCP connection by its timeout but waits for the scheduler's handshake
                # for ever: a port that accepts and stays silent would hang the run. The whole start,
                # handshake included, gets what is left of the connect timeout.
                import asyncio

                return await asyncio.wait_for(super()._start(*args, **kwargs), max(0.1, ends - time.monotonic()))

            def __del__(self) -> None:
                # A client that never connected would wait seconds at exit to close, and print a traceback.
                if getattr(self, "status", None) == "running":
                    super().__del__()

        if self.local_workers is not None:
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")  # (a busy default port: the one-run cluster takes another, and says so)
                    self._cluster = distributed.LocalCluster(n_workers=self.local_workers, threads_per_worker=1, processes=True,
                                                             host="127.0.0.1", dashboard_address=":0", silence_logs=50)
            except Exception as exc:
                raise Unavailable(f"--scheduler {self.spec}: cannot start a local cluster ({type(exc).__name__}: {exc})") from None
            target: Any = self._cluster
        else:
            target = self.spec
        try:
            return Client(target, timeout=max(0.1, ends - time.monotonic()), set_as_default=False)
        except Exception as exc:
            reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            if isinstance(exc, TimeoutError) and not str(exc):
                reason = f"no answer within {self.connect_timeout:g} s (--connect-timeout)"
            raise Unavailable(f"scheduler {self.spec} unavailable: {reason}") from None

    def workers(self) -> int:
        """Workers on the cluster, waiting up to the connect timeout for the first (else Unavailable: a run would never end)."""
        client = self.client()
        count = len(client.scheduler_info().get("workers", {}))
        if count == 0:
            try:
                client.wait_for_workers(1, timeout=self.connect_timeout)
            except Exception:
                raise Unavailable(f"scheduler {self.spec} has no worker (none joined within {self.connect_timeout:g} s)") from None
            count = len(client.scheduler_info().get("workers", {}))
        return max(1, count)

    def map(self, fn: Callable[..., Any], items: Sequence[Any], *, batch: int | None = None, **kwargs: Any) -> Iterator[Any]:
        """FN(item, **kwargs) for each item, in item order, run on the cluster; bad input comes back as a `CattyError` value."""
        if not items:
            return
        client = self.client()
        workers = self.workers()
        if batch is None:
            batch = max(1, min(MAX_BATCH, -(-len(items) // (workers * TASKS_PER_WORKER))))
        chunks = [list(items[i : i + batch]) for i in range(0, len(items), batch)]
        futures = client.map(_run_batch, [fn] * len(chunks), chunks, [kwargs] * len(chunks), retries=RETRIES, pure=False)
        order = {f.key: n for n, f in enumerate(futures)}
        done: dict[int, Any] = {}
        nxt = 0
        distributed = _import_distributed()
        try:
            # Results stream back as tasks finish (one round trip each would cost more than a small task); yielded in order.
            for finished in distributed.as_completed(futures, loop=client.loop).batches():
                for future, got in zip(finished, client.gather(finished)):
                    done[order[future.key]] = got
                while nxt in done:
                    for kind, payload, written in done.pop(nxt):
                        yield _outcome(kind, payload, written)
                    nxt += 1
        except (CattyError, RemoteBug):
            raise
        except Exception as exc:
            raise Unavailable(f"scheduler {self.spec}: the run was lost ({type(exc).__name__}: {exc})") from None
        finally:
            client.cancel(futures)

    def close(self) -> None:
        client, cluster = self._client, self._cluster
        self._client = self._cluster = None
        if client is not None:
            try:
                client.close(timeout=self.connect_timeout)
            except Exception:
                pass
        if cluster is not None:
            try:
                cluster.close(timeout=self.connect_timeout)
            except Exception:
                pass


def each(fn: Callable[..., Any], items: Iterable[Any], engine: Engine | None = None, **kwargs: Any) -> Iterator[tuple[Any, Any]]:
    """(item, FN(item, **kwargs)) in item order, here or on ENGINE's cluster; a `CattyError` (bad input) is the result, not raised.

    An item that is a URL (a session of a URL ROOT) is read from a local copy (`urlcopy.on_copy`)."""
    listed = list(items)
    if any(isinstance(item, str) and "://" in item for item in listed):
        fn = functools.partial(on_copy, fn)
    items = listed
    if engine is None:
        for item in items:
            try:
                yield item, fn(item, **kwargs)
            except CattyError as exc:
                yield item, exc
        return
    yield from zip(listed, engine.map(fn, listed, **kwargs))


class _Here:
    """`engine_for` when no scheduler is asked for: the work runs in this process."""

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        pass


def engine_for(option: str | None, connect_timeout: float | None = None) -> Engine | _Here:
    """A context giving the engine the options ask for (closed after), or None to run here."""
    spec = scheduler_from(option)
    if spec is None:
        return _Here()
    return Engine(spec, CONNECT_TIMEOUT if connect_timeout is None else connect_timeout)
