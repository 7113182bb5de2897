"""A scripted OTLP/HTTP endpoint on 127.0.0.1 for fault-injection tests (a real process; rotel
cannot be told to fail). Usage: otlp_http_stub.py PORT MODE

MODE: ``unavailable:N`` answers the first N requests 503 with ``Retry-After: 1``, then 200;
``bad-request`` answers every request 400; ``silent`` accepts and never answers.
Prints ``listening`` once bound, then ``request <status>`` per request, flushed."""

import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

PORT = int(sys.argv[1])
MODE = sys.argv[2]
LOCK = threading.Lock()
SEEN = [0]


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        with LOCK:
            SEEN[0] += 1
            n = SEEN[0]
        if MODE == "silent":
            print("request silent", flush=True)
            threading.Event().wait()
        if MODE.startswith("unavailable:") and n <= int(MODE.split(":")[1]):
            status, extra = 503, [("Retry-After", "1")]
        elif MODE == "bad-request":
            status, extra = 400, []
        else:
            status, extra = 200, []
        print(f"request {status}", flush=True)
        self.send_response(status)
        for k, v in extra:
            self.send_header(k, v)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()


server = ThreadingHTTPServer(("127.0.0.1", PORT), Handler)
server.daemon_threads = True
print("listening", flush=True)
server.serve_forever()
