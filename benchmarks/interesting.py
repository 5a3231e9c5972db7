"""Interestingness test for the peer reducers: a thin client of benchmarks/predicate_server.py.

It sends the candidate to the case's predicate server and exits 0 iff the server judges it
interesting (our Minimizer's judgement, over the server's warm pool); 1 when not; 2 when the server
could not be asked or answered with an error (also "not interesting" to a reducer).

    interesting.py [--socket PATH] [FILE]     # the candidate: FILE, or stdin
    interesting.py [--socket PATH] --describe # print the case's original failure as JSON

--socket defaults to $PT2_BENCH_SOCKET. The candidate comes as a path (shrinkray >= 25 with
--input-type arg) or on stdin (shrinkray 0.0.x, which only pipes). Standard library only, so a
peer's test starts in milliseconds; the server counts the runs.
"""
from __future__ import annotations

import argparse
import json
import os
import socket
import sys

SOCKET_VAR = "PT2_BENCH_SOCKET"


class ServerError(RuntimeError):
    pass


def request(socket_path: str, message: dict, timeout_s: float | None = None) -> dict:
    """Send one JSON request to the predicate server and return its JSON answer."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
        conn.settimeout(timeout_s)
        try:
            conn.connect(socket_path)
            conn.sendall(json.dumps(message).encode("utf-8", "surrogatepass"))
            conn.shutdown(socket.SHUT_WR)
            chunks = []
            while chunk := conn.recv(65536):
                chunks.append(chunk)
        except OSError as exc:
            raise ServerError(f"predicate server at {socket_path}: {exc}") from None
    try:
        reply = json.loads(b"".join(chunks))
    except ValueError:
        raise ServerError("predicate server: no answer") from None
    if "error" in reply:
        raise ServerError(f"predicate server: {reply['error']}")
    return reply


def ask(socket_path: str, source: str) -> bool:
    """Whether the server judges `source` interesting."""
    return bool(request(socket_path, {"op": "judge", "source": source})["interesting"])


def describe(socket_path: str) -> dict:
    return request(socket_path, {"op": "describe"})


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("file", nargs="?", help="the candidate script (default: stdin)")
    parser.add_argument("--socket", default=os.environ.get(SOCKET_VAR), help=f"the server's socket (default ${SOCKET_VAR})")
    parser.add_argument("--describe", action="store_true", help="print the case's original failure as JSON")
    args = parser.parse_args(argv)
    if not args.socket:
        parser.error(f"no predicate server: give --socket or set ${SOCKET_VAR}")
    try:
        if args.describe:
            print(json.dumps(describe(args.socket)))
            return 0
        with open(args.file, "rb") if args.file else sys.stdin.buffer as stream:
            source = stream.read().decode("utf-8", errors="replace")
        return 0 if ask(args.socket, source) else 1
    except ServerError as exc:
        print(exc, file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
