//! The views read the same span from WIT records and from OTLP protobuf bytes (written here
//! field by field, by the OTLP schema's numbers); bad bytes are reported, never a panic; and the
//! life cycle the adapter enforces.

use std::fmt::Write;

use crate::bindings::spans::lens::exporter::types as wit;
use crate::{Config, ExportResult, SpanBatch, SpanExporter, Status, Value, adapter, wire};

/// A protobuf message under construction.
#[derive(Default)]
struct Msg(Vec<u8>);

impl Msg {
    fn varint(mut self, mut v: u64) -> Self {
        loop {
            let byte = (v & 0x7f) as u8;
            v >>= 7;
            if v == 0 {
                self.0.push(byte);
                return self;
            }
            self.0.push(byte | 0x80);
        }
    }
    fn key(self, number: u32, wire_type: u64) -> Self {
        self.varint(u64::from(number) << 3 | wire_type)
    }
    fn int(self, number: u32, v: u64) -> Self {
        self.key(number, 0).varint(v)
    }
    fn fixed64(mut self, number: u32, v: u64) -> Self {
        self = self.key(number, 1);
        self.0.extend_from_slice(&v.to_le_bytes());
        self
    }
    fn fixed32(mut self, number: u32, v: u32) -> Self {
        self = self.key(number, 5);
        self.0.extend_from_slice(&v.to_le_bytes());
        self
    }
    fn bytes(mut self, number: u32, b: &[u8]) -> Self {
        self = self.key(number, 2).varint(b.len() as u64);
        self.0.extend_from_slice(b);
        self
    }
    fn msg(self, number: u32, m: Msg) -> Self {
        self.bytes(number, &m.0)
    }
}

/// A `KeyValue` as field `number` of its parent.
fn kv(number: u32, key: &str, value: Msg) -> Msg {
    Msg::default().msg(
        number,
        Msg::default().bytes(1, key.as_bytes()).msg(2, value),
    )
}

/// Appends `more`'s bytes (a repeated field written separately).
fn cat(a: Msg, more: Msg) -> Msg {
    let mut a = a;
    a.0.extend_from_slice(&more.0);
    a
}

const TRACE: u128 = 0x0af7651916cd43dd8448eb211c80319c;
const SPAN: u64 = 0xb7ad6b7169203331;
const PARENT: u64 = 0x00f067aa0ba902b7;

fn proto_request() -> Vec<u8> {
    let attrs = [
        kv(
            9,
            "phase",
            Msg::default().bytes(1, "träin \"q\"".as_bytes()),
        ),
        kv(9, "ok", Msg::default().int(2, 1)),
        kv(9, "step", Msg::default().int(3, (-7i64) as u64)),
        kv(9, "loss", Msg::default().fixed64(4, 0.25f64.to_bits())),
        kv(
            9,
            "dims",
            Msg::default().msg(
                5,
                cat(
                    Msg::default().msg(1, Msg::default().int(3, 8)),
                    Msg::default().msg(1, Msg::default().int(3, 4096)),
                ),
            ),
        ),
        kv(9, "raw", Msg::default().bytes(7, &[1, 2])),
    ];
    let mut span = Msg::default()
        .bytes(1, &TRACE.to_be_bytes())
        .bytes(2, &SPAN.to_be_bytes())
        .bytes(3, b"k=v")
        .bytes(4, &PARENT.to_be_bytes())
        .bytes(5, b"step")
        .int(6, 3)
        .fixed64(7, 1_000)
        .fixed64(8, 4_500)
        .int(10, 1)
        // An unknown field (a newer schema) is skipped.
        .int(99, 5);
    for a in attrs {
        span = cat(span, a);
    }
    span = span
        .msg(
            11,
            cat(
                Msg::default().fixed64(1, 2_000).bytes(2, b"grad-norm"),
                kv(3, "norm", Msg::default().fixed64(4, 0.5f64.to_bits())),
            ),
        )
        .msg(
            13,
            Msg::default()
                .bytes(1, &TRACE.to_be_bytes())
                .bytes(2, &PARENT.to_be_bytes())
                .fixed32(6, 0x301),
        )
        .msg(15, Msg::default().bytes(2, b"spike").int(3, 2))
        .fixed32(16, 0x101);
    let scope = Msg::default().bytes(1, b"trainer").bytes(2, b"1.0");
    let scope_spans = Msg::default().msg(1, scope).msg(2, span);
    let resource_spans = Msg::default().msg(1, Msg::default()).msg(2, scope_spans);
    Msg::default().msg(1, resource_spans).0
}

fn typed_groups() -> Vec<wit::ScopeSpans> {
    let key_value = |key: &str, value| wit::KeyValue {
        key: key.into(),
        value,
    };
    let cx = |span_id, trace_flags, is_remote| wit::SpanContext {
        trace_id: ((TRACE >> 64) as u64, TRACE as u64),
        span_id,
        trace_flags,
        is_remote,
        trace_state: String::new(),
    };
    vec![wit::ScopeSpans {
        scope: wit::InstrumentationScope {
            name: "trainer".into(),
            version: Some("1.0".into()),
            schema_url: None,
            attributes: vec![],
        },
        spans: vec![wit::SpanData {
            span_context: wit::SpanContext {
                trace_state: "k=v".into(),
                ..cx(SPAN, 1, false)
            },
            parent_span_id: Some(PARENT),
            span_kind: wit::SpanKind::Client,
            name: "step".into(),
            start_time: 1_000,
            end_time: 4_500,
            attributes: vec![
                key_value("phase", wit::Value::String("träin \"q\"".into())),
                key_value("ok", wit::Value::Bool(true)),
                key_value("step", wit::Value::S64(-7)),
                key_value("loss", wit::Value::F64(0.25)),
                key_value("dims", wit::Value::S64Array(vec![8, 4096])),
                key_value("raw", wit::Value::Bytes(vec![1, 2])),
            ],
            events: vec![wit::Event {
                name: "grad-norm".into(),
                time: 2_000,
                attributes: vec![key_value("norm", wit::Value::F64(0.5))],
                dropped_attributes: 0,
            }],
            links: vec![wit::Link {
                span_context: cx(PARENT, 1, true),
                attributes: vec![],
                dropped_attributes: 0,
            }],
            status: wit::Status::Error("spike".into()),
            dropped_attributes: 1,
            dropped_events: 0,
            dropped_links: 0,
        }],
    }]
}

/// Everything a view shows, as text.
fn render(batch: SpanBatch<'_>) -> String {
    let mut out = String::new();
    for s in batch.spans() {
        let cx = s.span_context;
        let _ = write!(
            out,
            "{} {} {} {:?} {:?} {:?} {} {} {:?} {:?} {} {}@{:?} ",
            s.name,
            cx.trace_id,
            cx.span_id,
            s.parent_span_id.map(|p| p.to_string()),
            cx.trace_state,
            s.kind,
            s.start_time,
            s.end_time,
            s.status,
            cx.trace_flags,
            s.dropped_attributes,
            s.scope.name,
            s.scope.version,
        );
        for (k, v) in s.attributes() {
            let _ = write!(out, "{k}={v} ");
        }
        for e in s.events() {
            let _ = write!(out, "event {} {} ", e.name, e.time);
            for (k, v) in e.attributes {
                let _ = write!(out, "{k}={v} ");
            }
        }
        for l in s.links() {
            let c = l.span_context;
            let _ = write!(
                out,
                "link {} {} {} {}",
                c.trace_id, c.span_id, c.trace_flags, c.is_remote
            );
        }
        out.push('\n');
    }
    out
}

#[test]
fn protobuf_and_typed_batches_read_the_same() {
    let bytes = proto_request();
    let groups = typed_groups();
    wire::reset_malformed();
    let proto = render(SpanBatch::from_otlp_protobuf(&bytes));
    assert!(!wire::malformed());
    let typed = render(SpanBatch::from_typed(&groups));
    assert_eq!(proto, typed);
    assert!(proto.starts_with(
        "step 0af7651916cd43dd8448eb211c80319c b7ad6b7169203331 Some(\"00f067aa0ba902b7\") \"k=v\" \
         Client 1000 4500 Error(\"spike\") 1 1 trainer@Some(\"1.0\") phase=träin \"q\" ok=true \
         step=-7 loss=0.25 dims=[8,4096] raw=[1,2] event grad-norm 2000 norm=0.5 \
         link 0af7651916cd43dd8448eb211c80319c 00f067aa0ba902b7 1 true"
    ), "{proto}");
    let batch = SpanBatch::from_otlp_protobuf(&bytes);
    assert_eq!((batch.len(), batch.is_empty()), (1, false));
    // Two resource groups (the request's field repeated): counted without parsing the spans.
    let twice = [bytes.clone(), bytes.clone()].concat();
    let both = SpanBatch::from_otlp_protobuf(&twice);
    assert_eq!((both.len(), both.spans().count()), (2, 2));
    assert_eq!(batch.otlp_protobuf(), Some(&bytes[..]));
    let span = batch.spans().next().unwrap();
    assert!(matches!(
        span.attributes().get("step"),
        Some(Value::I64(-7))
    ));
    assert_eq!(span.status, Status::Error("spike"));
    assert_eq!(span.duration_nanos(), 3_500);
}

#[test]
fn every_truncation_of_a_batch_is_reported_not_a_panic() {
    let bytes = proto_request();
    for cut in 1..bytes.len() {
        wire::reset_malformed();
        let _ = render(SpanBatch::from_otlp_protobuf(&bytes[..cut]));
        assert!(wire::malformed(), "cut at {cut} of {}", bytes.len());
    }
}

#[test]
fn an_empty_request_has_no_spans() {
    wire::reset_malformed();
    let batch = SpanBatch::from_otlp_protobuf(&[]);
    assert!(batch.is_empty());
    assert!(!wire::malformed());
}

struct Counting(usize);

impl SpanExporter for Counting {
    fn new(config: Config) -> Result<Self, String> {
        match config.setting("fail") {
            Some(why) => Err(why.to_string()),
            None => Ok(Counting(0)),
        }
    }
    fn export(&mut self, batch: SpanBatch<'_>) -> ExportResult {
        self.0 += batch.len();
        if self.0 > 1 {
            return Err(crate::ExportError::retry_after(
                "busy",
                std::time::Duration::from_millis(1500),
            ));
        }
        Ok(())
    }
}

thread_local! {
    static SLOT: adapter::Slot<Counting> = const { adapter::Slot::new() };
}

#[test]
fn the_adapter_keeps_the_life_cycle() {
    let resource = || wit::Resource {
        attributes: vec![],
        schema_url: None,
    };
    let export =
        || adapter::span_export::<Counting>(&SLOT, wit::Batch::OtlpProtobuf(proto_request()));
    assert_eq!(
        export(),
        Err(wit::ExportError::Rejected(
            "the exporter was not initialized".into()
        ))
    );
    let refused =
        adapter::span_init::<Counting>(&SLOT, vec![("fail".into(), "no key".into())], resource());
    assert_eq!(refused, Err("no key".to_string()));
    let encoding = adapter::span_init::<Counting>(&SLOT, vec![], resource()).unwrap();
    assert_eq!(encoding, wit::Encoding::Typed);
    assert_eq!(export(), Ok(()));
    assert_eq!(
        export(),
        Err(wit::ExportError::Retryable(wit::RetryHint {
            message: "busy".into(),
            delay_ms: Some(1500)
        }))
    );
    let json = adapter::span_export::<Counting>(&SLOT, wit::Batch::OtlpJson("{}".into()));
    assert!(matches!(json, Err(wit::ExportError::Rejected(m)) if m.contains("OTLP/JSON")));
    let mut truncated = proto_request();
    truncated.pop();
    let malformed = adapter::span_export::<Counting>(&SLOT, wit::Batch::OtlpProtobuf(truncated));
    assert!(matches!(malformed, Err(wit::ExportError::Rejected(m)) if m.contains("malformed")));
    let shutdown = |_: &mut Counting| Ok(());
    assert_eq!(adapter::shutdown(&SLOT, shutdown), Ok(()));
    assert_eq!(
        export(),
        Err(wit::ExportError::Rejected(
            "the exporter is shut down".into()
        ))
    );
    assert_eq!(
        adapter::shutdown(&SLOT, shutdown),
        Err("already shut down".into())
    );
}

#[cfg(feature = "serde")]
#[test]
fn views_serialize_as_plain_json() {
    let bytes = proto_request();
    let span = SpanBatch::from_otlp_protobuf(&bytes)
        .spans()
        .next()
        .unwrap();
    assert_eq!(
        serde_json::to_string(&span.attributes()).unwrap(),
        r#"{"phase":"träin \"q\"","ok":true,"step":-7,"loss":0.25,"dims":[8,4096],"raw":[1,2]}"#
    );
    assert_eq!(
        serde_json::to_string(&(span.span_context.trace_id, span.parent_span_id)).unwrap(),
        r#"["0af7651916cd43dd8448eb211c80319c","00f067aa0ba902b7"]"#
    );
}

/// The crate's doc example (compiled by the doc tests) is the one `docs/writing-an-exporter.md`
/// shows: a copy that cannot drift.
#[test]
fn the_docs_rust_example_is_the_crate_example() {
    let docs = include_str!("../../../docs/writing-an-exporter.md");
    let section = &docs[docs.find("### Rust").unwrap()..];
    let start = section.find("```rust\n").unwrap() + "```rust\n".len();
    let snippet = &section[start..start + section[start..].find("```").unwrap()];
    let crate_doc: String = include_str!("lib.rs")
        .lines()
        .filter_map(|l| l.strip_prefix("//!"))
        .map(|l| format!("{}\n", l.strip_prefix(' ').unwrap_or(l)))
        .collect();
    let start = crate_doc.find("```no_run\n").unwrap() + "```no_run\n".len();
    let example = &crate_doc[start..start + crate_doc[start..].find("```").unwrap()];
    assert_eq!(example, snippet);
}

#[test]
fn the_temporality_setting_reads_the_convention_and_names_a_bad_value() {
    use crate::metrics::Temporality;
    let config = |v: Option<&str>| {
        let settings = v.map(|v| vec![("temporality".to_string(), v.to_string())]);
        Config::new(
            settings.unwrap_or_default(),
            wit::Resource {
                attributes: Vec::new(),
                schema_url: None,
            },
        )
    };
    assert!(matches!(
        config(None).temporality(),
        Ok(Temporality::Cumulative)
    ));
    assert!(matches!(
        config(Some("delta")).temporality(),
        Ok(Temporality::Delta)
    ));
    assert!(matches!(
        config(Some("low-memory")).temporality(),
        Ok(Temporality::LowMemory)
    ));
    let err = config(Some("weekly")).temporality().unwrap_err();
    assert!(err.contains("`weekly`"), "{err}");
}

#[test]
fn values_display_as_opentelemetry_displays_them() {
    use crate::value::Value;
    let strings = vec!["a".to_string(), "b\"c".to_string()];
    let kv = vec![
        wit::KeyValue {
            key: "k".into(),
            value: wit::Value::S64Array(vec![1, 2]),
        },
        wit::KeyValue {
            key: "s".into(),
            value: wit::Value::String("x".into()),
        },
    ];
    let shown = |v: wit::Value| Value::from_wit(&v).to_string();
    assert_eq!(shown(wit::Value::StringArray(strings)), r#"["a","b\"c"]"#);
    assert_eq!(
        shown(wit::Value::BoolArray(vec![true, false])),
        "[true,false]"
    );
    assert_eq!(shown(wit::Value::F64Array(vec![1.5, -2.0])), "[1.5,-2]");
    assert_eq!(shown(wit::Value::Bytes(vec![0, 255])), "[0,255]");
    assert_eq!(shown(wit::Value::String("plain".into())), "plain");
    let map = Value::Map(crate::value::Attributes::from_wit(&kv));
    assert_eq!(map.to_string(), r#"{"k":[1,2],"s":"x"}"#);
}

#[test]
fn edits_answer_each_span_once_in_index_order_and_a_drop_wins() {
    use crate::bindings::processors::lens::exporter::edit_types::{Action, Change};
    use crate::{Edits, NewStatus};
    let edits = Edits::new();
    assert!(edits.into_wit().is_empty(), "no edit: an empty answer");
    let mut edits = Edits::new();
    edits.rename(3, "renamed");
    edits.set_attribute(3, "cost.centre", "research");
    edits.remove_attribute(3, "gen_ai.prompt");
    edits.set_status(3, NewStatus::Error("bad".into()));
    edits.set_attribute(1, "n", 7i64);
    edits.drop(1);
    edits.set_attribute(1, "ignored", true);
    edits.drop(0);
    assert!(edits.is_dropped(1) && !edits.is_dropped(3));
    assert_eq!(edits.len(), 3);
    let answer = edits.into_wit();
    let indices: Vec<u32> = answer.iter().map(|e| e.index).collect();
    assert_eq!(indices, [0, 1, 3]);
    assert!(matches!(answer[0].action, Action::Drop));
    assert!(matches!(answer[1].action, Action::Drop));
    let Action::Edit(changes) = &answer[2].action else {
        panic!("span 3 is edited")
    };
    assert!(matches!(&changes[0], Change::Rename(n) if n == "renamed"));
    assert!(matches!(&changes[1], Change::SetAttribute(kv) if kv.key == "cost.centre"));
    assert!(matches!(&changes[2], Change::RemoveAttribute(k) if k == "gen_ai.prompt"));
    assert!(matches!(&changes[3], Change::SetStatus(wit::Status::Error(d)) if d == "bad"));
}

/// Drops the metrics named in `drop`, renames the others `<name>.x`.
struct Renamer(String);

impl crate::MetricProcessor for Renamer {
    fn new(config: Config) -> Result<Self, String> {
        Ok(Renamer(config.setting("drop").unwrap_or("").to_string()))
    }
    fn process(
        &mut self,
        batch: crate::MetricBatch<'_>,
        edits: &mut crate::Edits,
    ) -> Result<(), String> {
        let crate::MetricBatch::Scopes(scopes) = batch else {
            return Err("typed collections only".into());
        };
        for (i, m) in scopes.iter().flat_map(|s| &s.metrics).enumerate() {
            if m.name == self.0 {
                edits.drop(i);
            } else {
                edits.rename(i, format!("{}.x", m.name));
                edits.set_attribute(i, "cost.centre", "research");
            }
        }
        Ok(())
    }
}

thread_local! {
    static METRIC_SLOT: adapter::Slot<Renamer> = const { adapter::Slot::new() };
}

#[test]
fn a_metric_processor_answers_by_metric_index_across_scopes() {
    use crate::bindings::metrics::lens::exporter::metric_types as m;
    use crate::bindings::processors::lens::exporter::edit_types::{Action, Change};
    let metric = |name: &str| m::Metric {
        name: name.into(),
        description: String::new(),
        unit: String::new(),
        data: m::MetricData::Gauge(m::Gauge {
            data_points: Vec::new(),
        }),
    };
    let scope = |metrics| m::ScopeMetrics {
        scope: wit::InstrumentationScope {
            name: "train".into(),
            version: None,
            schema_url: None,
            attributes: Vec::new(),
        },
        metrics,
    };
    let settings = vec![("drop".to_string(), "hot".to_string())];
    let resource = wit::Resource {
        attributes: vec![],
        schema_url: None,
    };
    let encoding = adapter::metric_processor_init::<Renamer>(&METRIC_SLOT, settings, resource);
    assert_eq!(encoding, Ok(wit::Encoding::Typed));
    let batch = m::MetricBatch::Typed(vec![
        scope(vec![metric("loss")]),
        scope(vec![metric("hot"), metric("tokens")]),
    ]);
    let answer = adapter::metric_process::<Renamer>(&METRIC_SLOT, batch).unwrap();
    let indices: Vec<u32> = answer.iter().map(|e| e.index).collect();
    assert_eq!(indices, [0, 1, 2]);
    assert!(matches!(answer[1].action, Action::Drop));
    let Action::Edit(changes) = &answer[2].action else {
        panic!("metric 2 is edited")
    };
    assert!(matches!(&changes[0], Change::Rename(n) if n == "tokens.x"));
    let json =
        adapter::metric_process::<Renamer>(&METRIC_SLOT, m::MetricBatch::OtlpJson("{}".into()));
    assert!(json.unwrap_err().contains("OTLP/JSON"));
}
