"""Running the proxy: its settings, the event loop, the start-up line, a clean stop (docs/proxy.md)."""
from __future__ import annotations

import asyncio
import gc
import signal
import sys
from dataclasses import dataclass, replace
from pathlib import Path

from ..compact.summarizers import get_summarizer
from ..errors import UsageError
from ..prune.options import PruneOptions
from ..redact import redact_url
from .lifecycle import STEPS, Lifecycle, LifecycleOptions
from .server import Log, Proxy
from .summarize import UPSTREAM


@dataclass(frozen=True)
class ProxySettings:
    host: str
    port: int
    root: str
    upstreams: dict[str, str]
    window: int | None
    threshold: float
    summarizer: str
    body_cap: int
    steps: frozenset[str]
    record: bool
    lead: float
    prefire_wait: float
    prune_high: float
    prune_low: float
    warn_remote: bool = False


def build(settings: ProxySettings, log: Log | None = None) -> Proxy:
    unknown = sorted(settings.steps - set(STEPS))
    if unknown:
        raise UsageError(f"proxy_steps: unknown step {', '.join(unknown)} (the steps are {', '.join(STEPS)})")
    if settings.summarizer != UPSTREAM:  # a spec it cannot use is refused now, not at the first compaction
        try:
            get_summarizer(settings.summarizer)
        except UsageError as exc:
            raise UsageError(f"--summarizer: {exc}; or {UPSTREAM}, the client's own upstream") from None
    root = Path(settings.root)
    root.mkdir(parents=True, exist_ok=True)
    log = log or Log(root)
    lifecycle = None
    if settings.record:
        prune = replace(PruneOptions(), high_percent=settings.prune_high, low_percent=settings.prune_low)
        lifecycle = Lifecycle(LifecycleOptions(steps=settings.steps, window=settings.window, threshold=settings.threshold, lead=settings.lead,
                                               prefire_wait=settings.prefire_wait, summarizer=settings.summarizer, prune=prune), log)
    return Proxy(root, settings.upstreams, settings.body_cap, lifecycle, log, record=settings.record)


async def _serve(settings: ProxySettings) -> None:
    proxy = build(settings)
    port = await proxy.start(settings.host, settings.port)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    if settings.warn_remote:
        proxy.log(f"warning: listening on {settings.host}, not loopback: anyone who reaches it can use your upstream credentials")
    ups = ", ".join(f"{k} → {redact_url(v)}" for k, v in sorted(settings.upstreams.items()))
    sys.stdout.write(f"http://{settings.host}:{port}\n")
    sys.stdout.flush()
    print(f"catty-ctx proxy: listening on http://{settings.host}:{port} ({ups}); sessions in {settings.root}", file=sys.stderr, flush=True)
    try:
        await stop.wait()
    finally:
        await proxy.close()


def serve(settings: ProxySettings) -> None:
    # Each request parses a whole history: the cyclic collector runs between requests, once
    # an answer is out (server.collect_garbage), never in the middle of one.
    gc.disable()
    asyncio.run(_serve(settings))
