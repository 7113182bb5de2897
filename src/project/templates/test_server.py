"""A stand-in for the vendor's ingest, to try the exporter on this machine: it listens on
127.0.0.1:4318, answers 200 to a POST carrying the header `x-api-key` equal to $VENDOR_API_KEY
and 401 to anything else, and prints a line per request.

    VENDOR_API_KEY=test-key python3 test_server.py
"""

import os
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

KEY = os.environ.get("VENDOR_API_KEY", "")


class Ingest(BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("content-length") or 0))
        good = bool(KEY) and self.headers.get("x-api-key") == KEY
        print(
            f"{self.path} {self.headers.get('content-type')} {len(body)} bytes "
            f"{'ok' if good else 'refused: no or wrong x-api-key'}",
            flush=True,
        )
        answer = b"" if good else b"invalid api key"
        self.send_response(200 if good else 401)
        self.send_header("content-length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def log_message(self, *args):
        pass


if __name__ == "__main__":
    if not KEY:
        raise SystemExit("set VENDOR_API_KEY to the key the server accepts")
    print("ingest on http://127.0.0.1:4318", flush=True)
    ThreadingHTTPServer(("127.0.0.1", 4318), Ingest).serve_forever()
