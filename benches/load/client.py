"""Posts one body (read from stdin) COUNT times on one keep-alive connection and checks each reply.

Usage: client.py PORT PATH COUNT [--expect TEXT] [HEADER=VALUE ...]
Every reply must have status 200 and, with --expect, contain TEXT.
"""
import http.client
import sys

args = sys.argv[1:]
expect = None
if "--expect" in args:
    at = args.index("--expect")
    expect = args[at + 1].encode()
    del args[at:at + 2]
port, path, count = int(args[0]), args[1], int(args[2])
headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream", "Host": "localhost"}
headers.update(h.split("=", 1) for h in args[3:])
body = sys.stdin.buffer.read()
connection = http.client.HTTPConnection("127.0.0.1", port)
for _ in range(count):
    connection.request("POST", path, body, headers)
    response = connection.getresponse()
    reply = response.read()
    assert response.status == 200 and (expect is None or expect in reply), (response.status, reply)
