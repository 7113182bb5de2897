"""HTTP for exporters built with `http = true` (`lens new python DIR --template http`): a POST
over `wasi:http`, and the reading of its answer that OTLP exporters use.

::

    from lens_exporter_sdk import http

    response = http.post("https://ingest.acme.com/v1/traces", body,
                         [("content-type", b"application/x-protobuf")], timeout=10.0)
    http.export_result("https://ingest.acme.com/v1/traces", response)

`export_result` returns for a 2xx; raises `RetryableExportError` for 429, 502, 503, 504 (after
`Retry-After`, when the server sends one in seconds) and for a failed connection; and raises
`RejectedExportError` naming the status and the first bytes of the body for anything else.
`send` does both.

What the request may reach is the host's to say: a host outside the entry's `allowed_hosts`
answers `HttpDenied`; the entry's `credentials` are added by the host to requests to their host,
so an exporter never reads a key (and could not: it is not in its environment, settings or
memory).
"""

from . import _results

# At import, not in `post`: componentize-py bundles the modules imported while it builds the
# component, and a world without `wasi:http` (or the SDK's tests) has none of these.
try:
    from componentize_py_types import Err
    from wit_world.imports import outgoing_handler, streams
    from wit_world.imports import wasi_http_types as t
except ImportError as e:
    outgoing_handler = streams = t = None
    _missing = str(e)

    class Err(Exception):
        """Never raised: there is no `wasi:http` to raise it."""


__all__ = [
    "HttpConnectionError",
    "HttpDenied",
    "HttpError",
    "HttpInvalid",
    "QUOTED_BODY",
    "Response",
    "Url",
    "export_result",
    "parse_url",
    "post",
    "send",
]

# How many bytes of an error response's body a message quotes.
QUOTED_BODY = 200

# The largest write `blocking_write_and_flush` takes (wasi:io allows 4096 bytes per call).
_CHUNK = 4096


class HttpError(Exception):
    """A request that got no response."""


class HttpDenied(HttpError):
    """The host refused the request (its host is not in `allowed_hosts`, or it resolves to an
    address the entry may not reach)."""

    def __str__(self):
        return f"denied by the host: {self.args[0]}"


class HttpConnectionError(HttpError):
    """The connection failed or timed out: worth retrying."""

    def __str__(self):
        return f"connection failed: {self.args[0]}"


class HttpInvalid(HttpError):
    """The request itself is wrong (its URL, a header)."""

    def __str__(self):
        return f"invalid request: {self.args[0]}"


class Response:
    """A response: `status`, `headers` (a list of `(lowercase name, bytes)`) and `body` (bytes)."""

    __slots__ = ("status", "headers", "body")

    def __init__(self, status, headers, body):
        self.status = status
        self.headers = headers
        self.body = body

    def header(self, name):
        """The first value of header `name` (any case), or `None`."""
        name = name.lower()
        return next((v for k, v in self.headers if k == name), None)

    def retry_after(self):
        """`Retry-After` in seconds (the form OTLP servers send), or `None`."""
        value = self.header("retry-after")
        try:
            return int(value.decode().strip()) if value is not None else None
        except (UnicodeDecodeError, ValueError):
            return None

    def __repr__(self):
        return f"Response(status={self.status}, {len(self.body)} bytes)"


class Url:
    """A URL as a request is made of it: `https`, `authority` (`host:port`) and `path`."""

    __slots__ = ("https", "authority", "path")

    def __init__(self, https, authority, path):
        self.https = https
        self.authority = authority
        self.path = path

    def __str__(self):
        return f"{'https' if self.https else 'http'}://{self.authority}{self.path}"


def parse_url(url, default_path="/"):
    """Splits `http[s]://authority[/path]`; a URL without a path gets `default_path` (an OTLP
    signal's `/v1/traces`, say). Raises `HttpInvalid`."""
    https = url.startswith("https://")
    if not https and not url.startswith("http://"):
        raise HttpInvalid(f"`{url}` must start with http:// or https://")
    rest = url[len("https://" if https else "http://") :]
    slash = rest.find("/")
    authority, path = (rest, default_path) if slash < 0 else (rest[:slash], rest[slash:])
    if not authority or any(c in authority for c in "@?#"):
        raise HttpInvalid(f"`{url}` has no host (or has a user, which goes in a header)")
    return Url(https, authority, path)


def export_result(what, sent):
    """Reads `sent` (a `Response`, or the `HttpError` `post` raised) as OTLP exporters do:
    returns for a 2xx, raises `RetryableExportError` or `RejectedExportError` otherwise, the
    message starting with `what` (the URL, say)."""
    if isinstance(sent, HttpConnectionError):
        raise _results.RetryableExportError(f"{what}: {sent}")
    if isinstance(sent, HttpError):
        raise _results.RejectedExportError(f"{what}: {sent}")
    if 200 <= sent.status < 300:
        return
    message = f"{what}: HTTP {sent.status}"
    if sent.body:
        quoted = sent.body[:QUOTED_BODY].decode("utf-8", "replace").strip()
        message += f": {quoted}"
        if len(sent.body) > QUOTED_BODY:
            message += f"… ({len(sent.body)} bytes)"
    if sent.status in (429, 502, 503, 504):
        after = sent.retry_after()
        raise _results.RetryableExportError(message, None if after is None else after * 1000)
    raise _results.RejectedExportError(message)


def send(url, body, headers=(), timeout=10.0):
    """`post`, then `export_result`: returns the response of a 2xx, raises otherwise."""
    try:
        response = post(url, body, headers, timeout)
    except HttpError as e:
        return export_result(url, e)
    export_result(url, response)
    return response


def post(url, body, headers=(), timeout=10.0):
    """POSTs `body` (bytes) to `url` with `headers` (pairs of name and `str` or `bytes`) and
    returns the `Response`; `timeout` (seconds, or `None`) bounds the connection and each wait
    for bytes. Raises `HttpDenied`, `HttpConnectionError` or `HttpInvalid`. Only inside a
    component built against an HTTP world (`http = true` in lens-exporter.toml)."""
    if outgoing_handler is None:
        raise HttpInvalid(
            "this component imports no wasi:http: build it with `http = true` in "
            f"lens-exporter.toml ({_missing})"
        )
    parsed = parse_url(url)
    pairs = [(k, v if isinstance(v, bytes) else str(v).encode()) for k, v in headers]
    # A length, not chunks: every server reads it, and the host checks the body against it.
    if not any(k.lower() == "content-length" for k, _ in pairs):
        pairs.append(("content-length", str(len(body)).encode()))
    try:
        fields = t.Fields.from_list(pairs)
    except Err as e:
        raise HttpInvalid(f"headers: {e.value}") from None
    # The request, its fields and its body pass to the host (`handle`, `finish`): no `with`.
    request = t.OutgoingRequest(fields)
    try:
        request.set_method(t.Method_Post())
        request.set_scheme(t.Scheme_Https() if parsed.https else t.Scheme_Http())
        request.set_authority(parsed.authority)
        request.set_path_with_query(parsed.path)
    except Err:
        raise HttpInvalid(f"`{url}`") from None
    options = None
    if timeout is not None:
        options = t.RequestOptions()
        ns = int(timeout * 1e9)
        for set_timeout in (
            options.set_connect_timeout,
            options.set_first_byte_timeout,
            options.set_between_bytes_timeout,
        ):
            try:
                set_timeout(ns)
            except Err:
                pass  # the host keeps its own bound
    outgoing = request.body()
    try:
        pending = outgoing_handler.handle(request, options)
    except Err as e:
        raise _classify(e.value) from None
    with pending:
        write_failed = None
        with outgoing.write() as stream:
            view = memoryview(body)
            for start in range(0, len(view), _CHUNK):
                try:
                    stream.blocking_write_and_flush(bytes(view[start : start + _CHUNK]))
                except Err as e:
                    write_failed = HttpConnectionError(f"writing the body: {e.value}")
                    break
        try:
            t.OutgoingBody.finish(outgoing, None)
        except Err as e:
            write_failed = write_failed or _classify(e.value)
        with pending.subscribe() as ready:
            ready.block()
        answer = pending.get()
    if answer is None or isinstance(answer, Err):
        raise HttpConnectionError(f"no response ({answer})")
    if isinstance(answer.value, Err):
        raise _classify(answer.value.value)
    if write_failed is not None:
        raise write_failed
    # Children before their parent: the body's stream, the body, then the response.
    with answer.value.value as response:
        status = response.status()
        with response.headers() as fields:
            headers = [(k.lower(), v) for k, v in fields.entries()]
        chunks = []
        with response.consume() as incoming, incoming.stream() as stream:
            while True:
                try:
                    chunks.append(stream.blocking_read(64 * 1024))
                except Err as e:
                    if isinstance(e.value, streams.StreamError_Closed):
                        break
                    raise HttpConnectionError(f"reading the body: {e.value}") from None
    return Response(status, headers, b"".join(chunks))


def _classify(code):
    """A `wasi:http` error code as the `HttpError` it means."""
    text = type(code).__name__.removeprefix("ErrorCode_")
    if isinstance(code, t.ErrorCode_HttpRequestDenied):
        return HttpDenied(f"{text}: its host is not in `allowed_hosts`")
    if isinstance(code, t.ErrorCode_DestinationIpProhibited):
        return HttpDenied(
            f"{text}: it resolves to an address the entry may not reach (`allow_private_addresses`)"
        )
    if isinstance(
        code,
        (
            t.ErrorCode_HttpRequestUriInvalid,
            t.ErrorCode_HttpRequestMethodInvalid,
            t.ErrorCode_HttpRequestHeaderSize,
        ),
    ):
        return HttpInvalid(text)
    detail = getattr(code, "value", None)
    return HttpConnectionError(f"{text}: {detail}" if detail is not None else text)
