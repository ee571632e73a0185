#!/usr/bin/env python3
"""A scripted HTTP server for the integration tests: it fails on purpose, in
sequences the test asks for, and counts every request it receives.

It binds 127.0.0.1 on a free port, prints the port on its first line of
standard output, and serves until it is terminated or its standard input
closes (so it never outlives the test process that started it).

Paths (GET, POST or PUT; KEY is any name the test picks, counted separately):
  /fail/KEY?times=N&status=S&retry_after=R
      the first N requests answer status S (default 503), with a Retry-After
      header when R is given (one header line per retry_after given, so
      retry_after=120&retry_after=120 sends the line twice); later requests
      answer 200 "ok".
  /drop/KEY?times=N
      the first N requests (default: all) are read and then the connection is
      closed without any response; later requests answer 200 "ok".
  /slow/KEY?times=N&delay=D
      the first N requests (default: all) wait D seconds (default 3) before
      answering 200 "slow"; later requests answer 200 "ok" at once.
  /redirect/KEY?times=N&status=S&location=L
      the first N requests (default: all) answer status S (default 302) with
      "Location: L"; later requests answer 200 "ok".
  /cut/KEY?times=N
      the first N requests (default: all) get headers promising 100 bytes of
      body and 5 of them, then the connection closes; later requests answer
      200 "ok".
  /reset/KEY?times=N
      as /cut, but the connection is reset (TCP RST) after the 5 bytes.
  /abort/KEY?times=N
      the first N requests (default: all) are read and then the connection is
      reset (TCP RST) with nothing sent; later requests answer 200 "ok".
  /token/KEY?fail=1
      a token endpoint, counted under "KEY.refresh": issues a new access token
      for KEY (the body, "token-N" for the N-th request) and makes it the only
      one /protected/KEY accepts; with fail=1 it answers 400
      {"error": "invalid_grant"} and issues nothing.
  /protected/KEY
      accepts only the token /token/KEY issued last, as "Authorization: Bearer
      TOKEN": answers 200 "ok TOKEN", and counts the request under
      "KEY.accepted"; any other token (or none) gets 401 with
      "WWW-Authenticate: Bearer error=\"invalid_token\"", counted under
      "KEY.refused".
  /_count/KEY
      the number of requests received so far for KEY, as plain text; not counted.
  /_bodies/KEY
      the bodies of the requests received so far for KEY, in order, each on its
      own line (a body sent with Content-Length or chunked); not counted.

Responses use HTTP/1.0 and close the connection, so a client never reuses one.
"""

import http.server
import os
import signal
import socket
import struct
import sys
import threading
import time
from urllib.parse import parse_qs, urlsplit

counts = {}
bodies = {}  # KEY -> the bodies of its requests, in order
counts_lock = threading.Lock()
tokens = {}  # KEY -> the access token /token/KEY issued last


def record(key, body=b""):
    """Counts one request for key, with its body, and returns its number, 1 for the first."""
    with counts_lock:
        counts[key] = counts.get(key, 0) + 1
        bodies.setdefault(key, []).append(body.decode("latin-1"))
        return counts[key]


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0"

    def do_GET(self):
        self.handle_request(b"")

    def do_POST(self):
        self.handle_request(self.read_body())

    def do_PUT(self):
        self.handle_request(self.read_body())

    def read_body(self):
        """The request's body, sent with Content-Length or chunked (as a body stream is)."""
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            data = b""
            while True:
                size = int(self.rfile.readline().strip().split(b";")[0], 16)
                if size == 0:
                    self.rfile.readline()
                    return data
                data += self.rfile.read(size)
                self.rfile.readline()
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def handle_request(self, body):
        url = urlsplit(self.path)
        parts = url.path.strip("/").split("/", 1)
        if len(parts) != 2:
            self.answer(404, "unknown path\n")
            return
        behaviour, key = parts
        lists = parse_qs(url.query)
        query = {name: values[-1] for name, values in lists.items()}

        if behaviour == "_count":
            with counts_lock:
                count = counts.get(key, 0)
            self.answer(200, f"{count}\n")
            return

        if behaviour == "_bodies":
            with counts_lock:
                received = list(bodies.get(key, []))
            self.answer(200, "".join(f"{body}\n" for body in received))
            return

        if behaviour in ("token", "protected"):
            self.handle_credentials(behaviour, key, query)
            return

        number = record(key, body)
        times = int(query.get("times", "1000000"))
        if behaviour == "fail":
            if number <= times:
                status = int(query.get("status", "503"))
                headers = [("Retry-After", value) for value in lists.get("retry_after", [])]
                self.answer(status, f"scripted failure {number}\n", headers)
            else:
                self.answer(200, "ok\n")
        elif behaviour == "drop":
            if number <= times:
                self.close_connection = True
                try:
                    self.connection.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
            else:
                self.answer(200, "ok\n")
        elif behaviour == "redirect":
            if number <= times:
                location = query.get("location", "/")
                self.answer(int(query.get("status", "302")), "", [("Location", location)])
            else:
                self.answer(200, "ok\n")
        elif behaviour in ("cut", "reset", "abort"):
            if number <= times:
                self.fail_midway(behaviour)
            else:
                self.answer(200, "ok\n")
        elif behaviour == "slow":
            if number <= times:
                time.sleep(float(query.get("delay", "3")))
                self.answer(200, "slow\n")
            else:
                self.answer(200, "ok\n")
        else:
            self.answer(404, "unknown behaviour\n")

    def fail_midway(self, behaviour):
        """Cuts the answer short (cut, reset) or resets the connection before answering (abort)."""
        if behaviour != "abort":
            try:
                self.send_response(200)
                self.send_header("Content-Type", "text/plain")
                self.send_header("Content-Length", "100")
                self.end_headers()
                self.wfile.write(b"12345")
                self.wfile.flush()
                time.sleep(0.2)
            except OSError:
                pass
        self.close_connection = True
        try:
            if behaviour == "cut":
                self.connection.shutdown(socket.SHUT_RDWR)
            else:
                # A zero linger time makes close() send a reset instead of a FIN.
                self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                self.connection.close()
        except OSError:
            pass

    def handle_credentials(self, behaviour, key, query):
        if behaviour == "token":
            number = record(f"{key}.refresh")
            if query.get("fail") == "1":
                self.answer(400, '{"error": "invalid_grant"}\n')
                return
            token = f"token-{number}"
            with counts_lock:
                tokens[key] = token
            self.answer(200, token)
            return
        authorization = self.headers.get("Authorization") or ""
        presented = authorization[len("Bearer "):] if authorization.startswith("Bearer ") else None
        with counts_lock:
            valid = tokens.get(key)
        if presented is not None and presented == valid:
            record(f"{key}.accepted")
            self.answer(200, f"ok {presented}\n")
        else:
            record(f"{key}.refused")
            self.answer(401, "stale token\n", [("WWW-Authenticate", 'Bearer error="invalid_token"')])

    def answer(self, status, body, headers=None):
        data = body.encode()
        try:
            self.send_response(status)
            for name, value in headers or []:
                self.send_header(name, value)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        except OSError:
            pass  # The client gave up (a timeout test); nothing to do.

    def log_message(self, format, *args):
        pass


class Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    # A thousand concurrent clients connect at once in the credential tests.
    request_queue_size = 1024

    def handle_error(self, request, client_address):
        pass  # Dropped and timed-out connections are the point here.


def exit_when_stdin_closes():
    sys.stdin.read()
    os._exit(0)


def main():
    # A Swift test process passes down a mask that blocks most signals; clear it
    # so that SIGTERM works as usual.
    signal.pthread_sigmask(signal.SIG_SETMASK, [])
    server = Server(("127.0.0.1", 0), Handler)
    threading.Thread(target=exit_when_stdin_closes, daemon=True).start()
    print(server.server_address[1], flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
