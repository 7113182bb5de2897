//! A vendor's ingest server on loopback for the HTTP tests: HTTP/1.1, one request per
//! connection, each recorded (head and body, chunked bodies decoded); a request without the
//! `required` header value is answered 401, the others with the configured status. It stops
//! when dropped (and never runs longer than its test: the accept loop polls a stop flag).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// One request as the server read it.
#[derive(Debug, Clone)]
pub struct Received {
    /// The request line.
    pub line: String,
    /// Its headers, names lower-cased, in order.
    pub headers: Vec<(String, String)>,
    /// Its body (de-chunked).
    pub body: Vec<u8>,
}

impl Received {
    /// The first value of header `name` (lower case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// The whole request as text (for "does the key appear anywhere" checks).
    pub fn text(&self) -> String {
        let mut s = self.line.clone();
        for (k, v) in &self.headers {
            s += &format!("\n{k}: {v}");
        }
        s + "\n" + &String::from_utf8_lossy(&self.body)
    }
}

/// The server.
pub struct IngestServer {
    /// Its port on 127.0.0.1.
    pub port: u16,
    received: Arc<Mutex<Vec<Received>>>,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

/// How the server answers.
#[derive(Debug, Clone)]
pub struct Answer {
    /// `(header, value)` a request must carry, else 401.
    pub required: Option<(String, String)>,
    /// The status of an accepted request.
    pub status: u16,
    /// Extra response headers, e.g. `("location", "http://…")`.
    pub headers: Vec<(String, String)>,
    /// The response body.
    pub body: Vec<u8>,
}

impl Default for Answer {
    fn default() -> Self {
        Self {
            required: None,
            status: 200,
            headers: Vec::new(),
            body: b"ok".to_vec(),
        }
    }
}

impl IngestServer {
    /// A server on a free loopback port answering as `answer` says.
    pub fn start(answer: Answer) -> Self {
        Self::start_on(0, answer)
    }

    /// [`start`](Self::start) on `port` (0: a free one), e.g. a vendor coming back on the port
    /// its exporter was configured with.
    pub fn start_on(port: u16, answer: Answer) -> Self {
        let listener = TcpListener::bind(("127.0.0.1", port)).unwrap();
        listener.set_nonblocking(true).unwrap();
        let port = listener.local_addr().unwrap().port();
        let received = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let thread = {
            let (received, stop) = (received.clone(), stop.clone());
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    match listener.accept() {
                        Ok((conn, _)) => {
                            let (received, answer) = (received.clone(), answer.clone());
                            std::thread::spawn(move || serve(conn, &answer, &received));
                        }
                        Err(_) => std::thread::sleep(Duration::from_millis(5)),
                    }
                }
            })
        };
        Self {
            port,
            received,
            stop,
            thread: Some(thread),
        }
    }

    /// `127.0.0.1:<port>`.
    pub fn authority(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// What it received so far.
    pub fn received(&self) -> Vec<Received> {
        self.received.lock().unwrap().clone()
    }
}

impl Drop for IngestServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn serve(conn: TcpStream, answer: &Answer, received: &Mutex<Vec<Received>>) {
    let _ = conn.set_nonblocking(false);
    let _ = conn.set_read_timeout(Some(Duration::from_secs(10)));
    let mut reader = BufReader::new(conn.try_clone().unwrap());
    let mut line = String::new();
    if reader.read_line(&mut line).unwrap_or(0) == 0 {
        return;
    }
    let mut headers = Vec::new();
    loop {
        let mut h = String::new();
        if reader.read_line(&mut h).unwrap_or(0) == 0 || h == "\r\n" {
            break;
        }
        if let Some((k, v)) = h.trim_end().split_once(':') {
            headers.push((k.trim().to_ascii_lowercase(), v.trim().to_string()));
        }
    }
    let get = |name: &str| {
        headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
    };
    let mut body = Vec::new();
    if get("transfer-encoding").is_some_and(|v| v.eq_ignore_ascii_case("chunked")) {
        loop {
            let mut size = String::new();
            if reader.read_line(&mut size).unwrap_or(0) == 0 {
                break;
            }
            let n = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
            let mut chunk = vec![0; n + 2];
            if n == 0 || reader.read_exact(&mut chunk).is_err() {
                break;
            }
            body.extend_from_slice(&chunk[..n]);
        }
    } else if let Some(n) = get("content-length").and_then(|v| v.parse::<usize>().ok()) {
        body.resize(n, 0);
        let _ = reader.read_exact(&mut body);
    }
    let authorized = answer
        .required
        .as_ref()
        .is_none_or(|(k, v)| get(k).as_deref() == Some(v.as_str()));
    received.lock().unwrap().push(Received {
        line: line.trim_end().to_string(),
        headers,
        body,
    });
    let (status, reason, extra, payload): (u16, &str, &[(String, String)], &[u8]) = if authorized {
        (answer.status, "Answer", &answer.headers, &answer.body)
    } else {
        (401, "Unauthorized", &[], b"{\"error\":\"invalid api key\"}")
    };
    let mut out = format!(
        "HTTP/1.1 {status} {reason}\r\ncontent-length: {}\r\nconnection: close\r\n",
        payload.len()
    );
    for (k, v) in extra {
        out += &format!("{k}: {v}\r\n");
    }
    out += "\r\n";
    let mut conn = conn;
    let _ = conn.write_all(out.as_bytes());
    let _ = conn.write_all(payload);
    let _ = conn.flush();
}
