//! An OTLP/HTTP collector for the tests: a plain HTTP/1.1 server on 127.0.0.1 (its own thread,
//! so it answers while the runtime under test is blocked flushing) that accepts
//! `POST /v1/traces` with a JSON body, decodes the spans, and answers `200 {}`. Anything else is
//! answered 404 and recorded as a fault, which [`Collector::spans`] reports.

#![allow(dead_code)]

use serde_json::{Map, Value};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};

/// A span as the collector received it.
#[derive(Clone, Debug)]
pub struct Span {
    pub name: String,
    pub trace_id: String,
    pub span_id: String,
    /// Empty for a root span.
    pub parent_id: String,
    /// OTLP's span kind: 1 internal, 2 server, 3 client.
    pub kind: i64,
    /// The attributes, their values as plain JSON (a string, a number, a boolean).
    pub attrs: Map<String, Value>,
    /// OTLP's status code: 0 unset, 1 ok, 2 error.
    pub status_code: i64,
    pub status_message: String,
    /// The span's events: each name and attributes.
    pub events: Vec<(String, Map<String, Value>)>,
    /// The `service.name` of the resource the span came with.
    pub service: String,
}

impl Span {
    /// The string attribute `key`, or `None`.
    pub fn str(&self, key: &str) -> Option<&str> {
        self.attrs.get(key).and_then(Value::as_str)
    }

    /// The integer attribute `key`, or `None`.
    pub fn int(&self, key: &str) -> Option<i64> {
        self.attrs.get(key).and_then(Value::as_i64)
    }
}

#[derive(Default)]
struct Received {
    spans: Vec<Span>,
    faults: Vec<String>,
}

/// A running collector.
pub struct Collector {
    /// `http://127.0.0.1:PORT`, the OTLP base URL (`/v1/traces` is added by the exporter).
    pub base_url: String,
    received: Arc<Mutex<Received>>,
}

impl Collector {
    /// Starts a collector on a free port.
    pub fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let base_url = format!("http://{}", listener.local_addr().unwrap());
        let received = Arc::new(Mutex::new(Received::default()));
        let r = received.clone();
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                let Ok(conn) = conn else { continue };
                let r = r.clone();
                std::thread::spawn(move || serve(conn, &r));
            }
        });
        Self { base_url, received }
    }

    /// The spans received so far, in the order they came.
    ///
    /// # Panics
    /// When the collector was sent something other than OTLP/JSON traces.
    pub fn spans(&self) -> Vec<Span> {
        let r = self.received.lock().unwrap();
        assert!(r.faults.is_empty(), "the collector got bad requests: {:?}", r.faults);
        r.spans.clone()
    }
}

/// Answers the requests of one connection (kept alive) until the client closes it.
fn serve(conn: TcpStream, received: &Mutex<Received>) {
    let mut out = conn.try_clone().unwrap();
    let mut reader = BufReader::new(conn);
    loop {
        let mut request_line = String::new();
        if reader.read_line(&mut request_line).unwrap_or(0) == 0 {
            return;
        }
        let mut headers = Vec::new();
        loop {
            let mut line = String::new();
            reader.read_line(&mut line).unwrap();
            let line = line.trim_end().to_owned();
            if line.is_empty() {
                break;
            }
            if let Some((k, v)) = line.split_once(':') {
                headers.push((k.trim().to_ascii_lowercase(), v.trim().to_owned()));
            }
        }
        let header = |name: &str| headers.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str());
        let Some(length) = header("content-length").and_then(|l| l.parse::<usize>().ok()) else {
            received
                .lock()
                .unwrap()
                .faults
                .push(format!("no content-length: {request_line}"));
            return;
        };
        let mut body = vec![0; length];
        reader.read_exact(&mut body).unwrap();
        let fault = if request_line.split_whitespace().take(2).collect::<Vec<_>>() != ["POST", "/v1/traces"] {
            Some(format!("unexpected request `{}`", request_line.trim_end()))
        } else if header("content-type") != Some("application/json") {
            Some(format!("unexpected content type {:?}", header("content-type")))
        } else {
            match serde_json::from_slice::<Value>(&body) {
                Ok(doc) => {
                    received.lock().unwrap().spans.extend(decode(&doc));
                    None
                }
                Err(e) => Some(format!("a body that is not JSON: {e}")),
            }
        };
        let status = match fault {
            Some(f) => {
                received.lock().unwrap().faults.push(f);
                "404 Not Found"
            }
            None => "200 OK",
        };
        let reply = format!("HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: 2\r\n\r\n{{}}");
        if out.write_all(reply.as_bytes()).is_err() {
            return;
        }
    }
}

/// The spans of an `ExportTraceServiceRequest` in OTLP/JSON.
fn decode(doc: &Value) -> Vec<Span> {
    let mut spans = Vec::new();
    for rs in doc["resourceSpans"].as_array().expect("resourceSpans") {
        let resource = attributes(&rs["resource"]["attributes"]);
        let service = resource.get("service.name").and_then(Value::as_str).unwrap_or_default();
        for ss in rs["scopeSpans"].as_array().expect("scopeSpans") {
            for s in ss["spans"].as_array().expect("spans") {
                let text = |k: &str| s[k].as_str().unwrap_or_default().to_owned();
                spans.push(Span {
                    name: text("name"),
                    trace_id: text("traceId"),
                    span_id: text("spanId"),
                    parent_id: text("parentSpanId"),
                    kind: integer(&s["kind"]).unwrap_or(0),
                    attrs: attributes(&s["attributes"]),
                    status_code: integer(&s["status"]["code"]).unwrap_or(0),
                    status_message: s["status"]["message"].as_str().unwrap_or_default().to_owned(),
                    events: s["events"]
                        .as_array()
                        .map(|es| {
                            es.iter()
                                .map(|e| {
                                    (
                                        e["name"].as_str().unwrap_or_default().to_owned(),
                                        attributes(&e["attributes"]),
                                    )
                                })
                                .collect()
                        })
                        .unwrap_or_default(),
                    service: service.to_owned(),
                });
            }
        }
    }
    spans
}

/// OTLP's `KeyValue` list as a map of plain JSON values.
fn attributes(list: &Value) -> Map<String, Value> {
    let mut out = Map::new();
    for kv in list.as_array().into_iter().flatten() {
        let v = &kv["value"];
        let plain = if let Some(s) = v.get("stringValue") {
            s.clone()
        } else if let Some(i) = v.get("intValue") {
            integer(i).map_or(Value::Null, Value::from)
        } else if let Some(b) = v.get("boolValue") {
            b.clone()
        } else if let Some(d) = v.get("doubleValue") {
            d.clone()
        } else {
            v.clone()
        };
        out.insert(kv["key"].as_str().unwrap_or_default().to_owned(), plain);
    }
    out
}

/// An integer sent as a number or, as OTLP/JSON sends 64-bit integers, a string.
fn integer(v: &Value) -> Option<i64> {
    v.as_i64().or_else(|| v.as_str().and_then(|s| s.parse().ok()))
}
