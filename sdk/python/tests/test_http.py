"""The HTTP helpers outside a component: URLs, and a response read as OTLP exporters read it;
and the forwarding exporters, which hand the batch's OTLP bytes over unchanged."""

import lens_exporter_sdk as sdk
import pytest
from lens_exporter_sdk import http
from wit_world.imports import log_types, metric_types, types


def test_a_url_splits_into_scheme_authority_and_path():
    u = http.parse_url("https://ingest.acme.com:8443/v1/traces", "/x")
    assert (u.https, u.authority, u.path) == (True, "ingest.acme.com:8443", "/v1/traces")
    u = http.parse_url("http://127.0.0.1:4318", "/v1/logs")
    assert (u.https, u.authority, u.path, str(u)) == (
        False,
        "127.0.0.1:4318",
        "/v1/logs",
        "http://127.0.0.1:4318/v1/logs",
    )


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("ftp://x", "must start with http:// or https://"),
        ("https:///v1", "has no host"),
        ("https://user:key@acme.com/", "has a user"),
    ],
)
def test_a_bad_url_is_invalid_saying_why(url, message):
    with pytest.raises(http.HttpInvalid, match=message):
        http.parse_url(url)


def response(status, body=b"", headers=()):
    return http.Response(status, list(headers), body)


def test_2xx_succeeds():
    for status in (200, 202, 204):
        assert http.export_result("u", response(status)) is None


@pytest.mark.parametrize("status", [429, 502, 503, 504])
def test_throttling_and_gateway_errors_are_retryable_with_retry_after(status):
    with pytest.raises(sdk.RetryableExportError) as e:
        http.export_result("u", response(status, b"slow down", [("retry-after", b"3")]))
    assert str(e.value) == f"u: HTTP {status}: slow down"
    assert e.value.delay_ms == 3000
    with pytest.raises(sdk.RetryableExportError) as e:
        http.export_result("u", response(status, headers=[("retry-after", b"soon")]))
    assert e.value.delay_ms is None


def test_other_statuses_are_rejected_naming_the_status_and_the_body_s_start():
    with pytest.raises(sdk.RejectedExportError, match=r"^u: HTTP 401: bad key$"):
        http.export_result("u", response(401, b"bad key\n"))
    with pytest.raises(sdk.RejectedExportError) as e:
        http.export_result("u", response(400, b"x" * 1000))
    assert str(e.value) == "u: HTTP 400: " + "x" * 200 + "… (1000 bytes)"
    with pytest.raises(sdk.RejectedExportError, match=r"^u: HTTP 500$"):
        http.export_result("u", response(500))


def test_a_failed_connection_is_retryable_and_a_denied_request_rejected():
    with pytest.raises(sdk.RetryableExportError, match="u: connection failed: refused"):
        http.export_result("u", http.HttpConnectionError("refused"))
    with pytest.raises(sdk.RejectedExportError, match="u: denied by the host: not allowed"):
        http.export_result("u", http.HttpDenied("not allowed"))


def test_post_outside_an_http_world_says_how_to_get_one():
    with pytest.raises(http.HttpInvalid, match="http = true"):
        http.post("http://127.0.0.1:1/", b"")


class Resource:
    attributes = ()
    schema_url = None


class Forward:
    def __init__(self, settings):
        self.encoding = settings.get("encoding", "protobuf")
        self.temporality = settings.get("temporality", "cumulative")
        self.answer = settings.get("answer")
        self.sent = []

    def export(self, data):
        if self.answer == "reject":
            raise sdk.RejectedExportError("HTTP 401: bad key")
        if self.answer == "retry":
            raise sdk.RetryableExportError("HTTP 503", 100)
        self.sent.append(data)


def test_a_forwarder_gets_the_bytes_as_the_host_sent_them():
    cls = sdk.otlp_span_exporter(Forward)
    assert cls().init([], Resource()) == types.Encoding.OTLP_PROTOBUF
    cls().export(types.Batch_OtlpProtobuf(b"\x0a\x00"))
    assert cls.exporter.sent == [b"\x0a\x00"]
    cls = sdk.otlp_log_exporter(Forward)
    assert cls().init([("encoding", "json")], Resource()) == types.Encoding.OTLP_JSON
    cls().export(log_types.LogBatch_OtlpJson('{"resourceLogs":[]}'))
    assert cls.exporter.sent == ['{"resourceLogs":[]}']


def test_a_forwarder_s_errors_reach_the_host_as_they_are():
    cls = sdk.otlp_span_exporter(Forward)
    cls().init([("answer", "reject")], Resource())
    with pytest.raises(sdk.Err) as e:
        cls().export(types.Batch_OtlpProtobuf(b""))
    assert e.value.value == types.ExportError_Rejected("HTTP 401: bad key")
    cls().init([("answer", "retry")], Resource())
    with pytest.raises(sdk.Err) as e:
        cls().export(types.Batch_OtlpProtobuf(b""))
    assert e.value.value == types.ExportError_Retryable(("HTTP 503", 100))


def test_a_metric_forwarder_chooses_encoding_and_temporality():
    cls = sdk.otlp_metric_exporter(Forward)
    assert cls().init([("temporality", "delta")], Resource()) == (
        types.Encoding.OTLP_PROTOBUF,
        metric_types.Temporality.DELTA,
    )
    cls().export(metric_types.MetricBatch_OtlpProtobuf(b"m"))
    assert cls.exporter.sent == [b"m"]
    with pytest.raises(sdk.Err, match="temporality is 'weekly'"):
        cls().init([("temporality", "weekly")], Resource())
    with pytest.raises(sdk.Err, match="encoding is 'xml'"):
        sdk.otlp_span_exporter(Forward)().init([("encoding", "xml")], Resource())


def test_a_forwarder_refuses_a_batch_of_another_kind_saying_what_it_takes():
    cls = sdk.otlp_metric_exporter(Forward)
    cls().init([], Resource())
    with pytest.raises(sdk.Err) as e:
        cls().export(types.Batch_OtlpJson("{}"))
    assert e.value.value == types.ExportError_Rejected(
        "a forwarding exporter takes OTLP protobuf or OTLP/JSON batches"
    )
