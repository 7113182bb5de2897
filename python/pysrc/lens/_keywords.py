"""The keywords every wasm exporter takes, as the JSON of a ``kind = "wasm"`` entry."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from os import PathLike
from typing import Any

from lens._lens import ProcessCore

#: What each keyword means (shared by the exporters' docstrings).
KEYWORDS = """Every keyword has the meaning and default of the same key in a ``kind = "wasm"``
    entry of Lens's TOML (``docs/configuration.md``):

    - ``settings``: ``{name: value}`` handed to the guest's ``init`` (strings);
    - ``preopens``: ``[{"host": "/data/out", "guest": "/out", "read_only": False}]``;
    - ``env``: ``{"API_KEY": "value"}`` or ``{"API_KEY": {"from_host": "API_KEY"}}``;
    - ``allowed_hosts``: ``["ingest.example.com:443"]`` for outgoing HTTP;
    - ``credentials``: headers the host adds to the guest's requests to one host, the guest
      never holding them: ``[{"host": "ingest.example.com:443", "header": "x-api-key",
      "from_env": "VENDOR_KEY"}]`` (or ``"from_file": "/run/secrets/vendor"``, and
      ``"prefix": "Bearer "``); each host must be in ``allowed_hosts``;
    - ``allow_private_addresses``: whether HTTP may reach private and link-local addresses
      (default ``False``; loopback always may); ``max_response_mib``: the largest response
      body the guest reads (default 4);
    - ``sha256``: the file's expected digest (hex);
    - ``allow_unpinned``, ``insecure_registries``: for a ``path`` that is an ``oci://``
      reference (a ``str``: ``"oci://ghcr.io/acme/exporter:1.2@sha256:…"``), whether its tag
      may be followed without a digest (default ``False``) and the registries reached over
      plain http besides loopback; ``verify_key``: the vendor's public key (``cosign.pub``):
      the component is used only if it carries a valid signature by it (``verify = { key }``);
    - ``memory_limit_mib``, ``call_timeout_ms``, ``fuel_per_call``: the sandbox's bounds;
    - ``max_answer_mib``: the most the guest hands the host in one call (default 16, at most
      ``memory_limit_mib``); past it the call is a fault (``answer limit``);
    - ``init_timeout_ms``: the deadline of the guest's ``init`` (default 5000);
    - ``compile_memory_mib``, ``compile_timeout_ms``: the bounds of compiling the component
      (default 2048 MiB, 300000 ms), which happens in a child of this interpreter;
    - ``export_timeout_ms``: one export's budget, the guest's retries included (default 30000);
      a guest's retry hint never shortens the host's backoff;
    - ``max_concurrent_exports``: instances run side by side;
    - ``shutdown_timeout_ms``: what ``shutdown()`` without a timeout gets (default 10000);
    - ``max_queue_size``, ``max_export_batch_size``: Lens's hand-off queue (defaults: the
      ``[batch]`` and ``[log_batch]`` tables', 16384 and 512 for spans, 2048 and 512 for logs);
    - ``forward_stdio``: the guest's stdout/stderr to this process's logging (default ``True``,
      as in the TOML);
    - ``name``: the name in messages and statistics (default: the file's stem);
    - ``spool`` (every signal, queued modes): keep what the exporter cannot take now on disk
      and send it when it is back, here or in the next process: ``{"dir": "/scratch/spool",
      "max_mib": 1024, "when_full": "drop_oldest"}`` (or a directory as a ``str``; ``dir``
      takes ``{service}``, ``{rank}``, ``{signal}``, ``{exporter}``, default under
      ``~/.cache/lens/spool`` named by ``OTEL_SERVICE_NAME``, ``RANK``, the signal and the
      exporter; ``docs/spool.md``); the
      statistics gain ``spooled``, ``replayed``, ``in_spool``, ``dropped_spool_full``;
    - ``processors`` (hand-off only): sandboxed processors run on each batch (or metric
      collection) before the exporter, in order, each a ``[[traces.processors]]`` (or
      ``[[metrics.processors]]``, ``[[logs.processors]]``) entry as a dict:
      ``[{"path": "redact.wasm", "on_fault": "drop", "settings": {"keys": "gen_ai.prompt"}}]``
      (``docs/processors.md``); what they drop counts as ``dropped_processor``."""


#: How ``export`` returns (shared by the span and log exporters' docstrings).
MODES = """``mode`` says how ``export`` returns. ``"delivered"`` (the default): the batch (or
    the records), read under the GIL, goes through Lens's own queue and export thread (its
    processors and accounting), and ``export`` returns once it is exported or counted as
    dropped, the GIL released while it waits. The SDK's batch processors flush by exporting
    their queue and never call the exporter's ``force_flush``, so this is what makes
    ``provider.force_flush()`` mean delivered. ``"hand-off"`` returns at once (the SDK's thread
    collects the next batch while the guest runs); then only this exporter's own
    ``force_flush()`` waits for what was handed off. ``"blocking"`` (or ``blocking=True``)
    exports on the caller's thread, without Lens's queue, and returns the guest's answer
    (``FAILURE``, never an exception, when it fails or faults); it takes no ``processors``."""


def spec_json(
    path: str | PathLike[str],
    *,
    settings: Mapping[str, str] | None = None,
    preopens: Sequence[Mapping[str, Any]] | None = None,
    env: Mapping[str, Any] | None = None,
    allowed_hosts: Sequence[str] | None = None,
    credentials: Sequence[Mapping[str, Any]] | None = None,
    allow_private_addresses: bool | None = None,
    max_response_mib: int | None = None,
    sha256: str | None = None,
    allow_unpinned: bool | None = None,
    insecure_registries: Sequence[str] | None = None,
    verify_key: str | PathLike[str] | None = None,
    memory_limit_mib: int | None = None,
    max_answer_mib: int | None = None,
    call_timeout_ms: int | None = None,
    fuel_per_call: int | None = None,
    init_timeout_ms: int | None = None,
    compile_memory_mib: int | None = None,
    compile_timeout_ms: int | None = None,
    export_timeout_ms: int | None = None,
    max_concurrent_exports: int | None = None,
    max_queue_size: int | None = None,
    max_export_batch_size: int | None = None,
    shutdown_timeout_ms: int | None = None,
    forward_stdio: bool | None = None,
    name: str | None = None,
    processors: Sequence[Mapping[str, Any]] | None = None,
    spool: str | PathLike[str] | Mapping[str, Any] | None = None,
) -> str:
    """The JSON the native exporters take (unset keywords keep the TOML's defaults)."""
    spec: dict[str, Any] = {"path": str(path)}
    for key, value in (
        ("settings", _strings(settings, "settings")),
        ("preopens", list(preopens) if preopens is not None else None),
        ("env", dict(env) if env is not None else None),
        ("allowed_hosts", list(allowed_hosts) if allowed_hosts is not None else None),
        ("credentials", _credentials(credentials)),
        (
            "allow_private_addresses",
            None if allow_private_addresses is None else bool(allow_private_addresses),
        ),
        ("max_response_mib", max_response_mib),
        ("sha256", sha256),
        ("allow_unpinned", None if allow_unpinned is None else bool(allow_unpinned)),
        (
            "insecure_registries",
            list(insecure_registries) if insecure_registries is not None else None,
        ),
        ("verify", None if verify_key is None else {"key": str(verify_key)}),
        ("memory_limit_mib", memory_limit_mib),
        ("max_answer_mib", max_answer_mib),
        ("call_timeout_ms", call_timeout_ms),
        ("fuel_per_call", fuel_per_call),
        ("init_timeout_ms", init_timeout_ms),
        ("compile_memory_mib", compile_memory_mib),
        ("compile_timeout_ms", compile_timeout_ms),
        ("forward_stdio", None if forward_stdio is None else bool(forward_stdio)),
        ("name", name),
        ("spool", _spool(spool)),
    ):
        if value is not None:
            spec[key] = value
    batch = {
        key: value
        for key, value in (
            ("max_concurrent_exports", max_concurrent_exports),
            ("export_timeout_ms", export_timeout_ms),
            ("max_queue_size", max_queue_size),
            ("max_export_batch_size", max_export_batch_size),
            ("shutdown_timeout_ms", shutdown_timeout_ms),
        )
        if value is not None
    }
    if batch:
        spec["batch"] = batch
    if processors:
        spec["processors"] = [processor_entry(p) for p in processors]
    return json.dumps(spec)


def _spool(value: str | PathLike[str] | Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The ``spool`` keyword as its TOML table: a directory, or the table's keys."""
    if value is None:
        return None
    if isinstance(value, Mapping):
        table = dict(value)
        if "dir" in table:
            table["dir"] = str(table["dir"])
        return table
    return {"dir": str(value)}


def processor_entry(entry: Mapping[str, Any]) -> dict[str, Any]:
    """A ``processors`` item as the JSON of a ``[[traces.processors]]`` entry."""
    if not isinstance(entry, Mapping) or "path" not in entry:
        raise TypeError(f"processors: each is a dict with a `path` (got {entry!r})")
    out = {"kind": "wasm", **entry, "path": str(entry["path"])}
    if "settings" in out:
        out["settings"] = _strings(out["settings"], "processors' settings")
    return out


def _credentials(values: Sequence[Mapping[str, Any]] | None) -> list[dict[str, Any]] | None:
    if values is None:
        return None
    out = []
    for c in values:
        if not isinstance(c, Mapping):
            raise TypeError(f"credentials: each is a dict with `host` and `header` (got {c!r})")
        entry = dict(c)
        if "from_file" in entry:
            entry["from_file"] = str(entry["from_file"])
        out.append(entry)
    return out


def _strings(values: Mapping[str, Any] | None, what: str) -> dict[str, str] | None:
    if values is None:
        return None
    out = {}
    for k, v in values.items():
        if not isinstance(k, str) or not isinstance(v, str):
            raise TypeError(f"{what}: keys and values are strings (got {k!r}: {v!r})")
        out[k] = v
    return out


def mode_of(mode: str | None, blocking: bool, default: str) -> str:
    """``mode=`` (``delivered``, ``hand-off``, ``blocking``), or ``blocking=True`` as
    ``"blocking"``, else ``default``."""
    if blocking:
        if mode not in (None, "blocking"):
            raise ValueError(f"blocking=True and mode={mode!r}: give one of them")
        return "blocking"
    return default if mode is None else mode


def expect_signal(signal: str, expected: str, cls: type) -> None:
    """`from_config`'s `signal=` must be the class's own."""
    if signal != expected:
        raise ValueError(
            f"{cls.__name__}.from_config: signal={signal!r}; this class reads the "
            f"[[{expected}.exporters]] entries"
        )


class Sandboxed:
    """What every exporter of the package shares: its native core's name, encoding, mode,
    flush, shutdown and counters, and the keywords in its docstring (``{keywords}``)."""

    _core: Any

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        doc = cls.__doc__ or ""
        cls.__doc__ = doc.replace("{keywords}", KEYWORDS).replace("{modes}", MODES)

    @property
    def blocking(self) -> bool:
        """Whether ``export`` waits for the guest without Lens's queue (``mode="blocking"``)."""
        return self._core.blocking

    @property
    def mode(self) -> str:
        """How ``export`` returns: ``delivered`` (once the batch is exported or counted as
        dropped), ``hand-off`` (at once) or ``blocking`` (with the guest's answer)."""
        return self._core.mode

    @property
    def name(self) -> str:
        """The exporter's name in messages and statistics."""
        return self._core.name

    @property
    def encoding(self) -> str | None:
        """The batch encoding the guest asked for: ``typed``, ``otlp-protobuf`` or
        ``otlp-json``."""
        return self._core.encoding

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        """Exports what was handed off, then asks the guest to flush what it buffers; ``False``
        when that did not happen within ``timeout_millis``."""
        return self._core.force_flush(int(timeout_millis)) is None

    def shutdown(self, timeout_millis: float | None = None, **_: Any) -> None:
        """Exports what was handed off and shuts the guest down within ``timeout_millis``
        (default: the entry's ``batch.shutdown_timeout_ms``, 10000: the SDK's processors call
        ``shutdown()`` without a timeout); what is left then, and what comes later, counts as
        dropped at shutdown. Idempotent."""
        self._core.shutdown(None if timeout_millis is None else int(timeout_millis))

    def reload(self, source: str | PathLike[str], **keywords: Any) -> str:
        """Replaces the running component while batches flow, and returns the new one's
        SHA-256. ``source`` is a ``.wasm`` file (this exporter's settings, with that file, or
        with ``keywords`` given, the entry they describe, as the constructor takes them) or a
        Lens TOML file (its ``kind = "wasm"`` entry of this signal named like this exporter).
        The new component is loaded, compiled, instantiated and ``init``-ed beside the running
        one, which keeps exporting; the switch falls between two batches, and the old instance
        then gets ``force-flush`` and ``shutdown``. Counters carry on (``reloads`` and
        ``component_sha256`` in ``stats()``). Raises ``ExporterLoadError`` naming the file and
        the failed step (load, interface check, link, grants, start, init, preferences); the
        running component stays. The entry's ``batch`` settings cannot change."""
        if keywords:
            return self._core.reload(str(source), spec_json(source, **keywords))
        return self._core.reload(str(source))

    def stats(self) -> dict[str, Any]:
        """Counters: items received, exported and dropped (``dropped_queue_full`` in Lens's
        hand-off queue, ``dropped_export_failed``, ``dropped_shutdown``, ``dropped_rejected``
        by the guest, ``dropped_processor`` by the processors before it, with
        ``processor_faults`` and both by processor name in ``processors``), ``pending``
        (queued or in flight), batches, ``retries`` and ``retries_exhausted``, guest errors,
        traps by kind, restarts, ``reloads`` and the running ``component_sha256``, export
        latency p50/p99 in ms, the peak memory of an instance, ``mode`` (``delivered``,
        ``hand-off`` or ``blocking``), and ``last_error``: the last failure in one line
        (``rejected: 401 Unauthorized from 127.0.0.1:18401``) or ``None``. Every item
        received ends in exactly one of exported and the dropped counters."""
        return json.loads(self._core.stats_json())

    @property
    def credentials(self) -> list[str]:
        """The host-held credentials, each by header, host and where its value comes from
        (never the value)."""
        return list(self._core.credentials)

    def __repr__(self) -> str:
        credentials = self.credentials
        shown = f", credentials={credentials!r}" if credentials else ""
        return f"{type(self).__name__}(name={self.name!r}{shown})"


class Processing:
    """What the ``Processing*Exporter``s share: sandboxed processors of one signal
    (``_signal``, in a native core) before the Python ``exporter`` they wrap, each a processor
    entry of that signal as a dict; ``name`` names the exporter in messages and statistics
    (default: its class's name)."""

    _signal = "traces"

    def __init__(
        self,
        exporter: Any,
        processors: Sequence[Mapping[str, Any]],
        *,
        name: str | None = None,
    ) -> None:
        self._exporter = exporter
        entries = json.dumps([processor_entry(p) for p in processors])
        self._core = ProcessCore(entries, name or type(exporter).__name__, self._signal)

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return self._exporter.force_flush(timeout_millis)

    def shutdown(self) -> None:
        """Shuts the processors, then the exporter, down."""
        self._core.shutdown()
        self._exporter.shutdown()

    def stats(self) -> dict[str, Any]:
        """Items ``received``, passed on (``exported``), ``dropped_processor`` and
        ``processor_faults``, both by processor in ``processors``."""
        return json.loads(self._core.stats_json())


def kept(items: Sequence[Any], fates: Sequence[Any], edited: Any) -> list[Any]:
    """The ``items`` the processors left: a fate ``None`` drops its item, ``True`` keeps it as
    it was, anything else is what ``edited(item, fate)`` makes of it."""
    return [
        item if fate is True else edited(item, fate)
        for item, fate in zip(items, fates, strict=True)
        if fate is not None
    ]
