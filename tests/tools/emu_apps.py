"""Tiny real applications for the emulator's tests, run inside its namespaces.

emu_apps.py sink PORT OUT      accept one TCP connection (IPv4), write what it
                               sends to OUT, exit 0 at its end
emu_apps.py send HOST PORT IN  connect (retrying while the server starts),
                               send IN, close, wait for the sink to close
emu_apps.py blast HOST PORT MBPS SECONDS
                               send 1472-byte UDP datagrams at MBPS for SECONDS
"""

import socket
import sys
import time


def sink(port: int, out: str) -> None:
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("0.0.0.0", port))
    s.listen(1)
    c, _ = s.accept()
    with open(out, "wb") as f:
        while True:
            b = c.recv(65536)
            if not b:
                break
            f.write(b)
    c.close()


def send(host: str, port: int, path: str) -> None:
    data = open(path, "rb").read()
    deadline = time.monotonic() + 20
    while True:
        try:
            c = socket.create_connection((host, port), timeout=30)
            break
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)
    c.sendall(data)
    c.shutdown(socket.SHUT_WR)
    while c.recv(65536):
        pass
    c.close()


def blast(host: str, port: int, mbps: float, seconds: float) -> None:
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    payload = bytes(1472)
    gap = 1500 * 8 / (mbps * 1e6)
    start = time.monotonic()
    n = 0
    while time.monotonic() - start < seconds:
        n += 1
        try:
            s.sendto(payload, (host, port))
        except OSError:
            pass  # a full device queue: the datagram is lost, as on a real host
        wait = start + n * gap - time.monotonic()
        if wait > 0:
            time.sleep(wait)


if __name__ == "__main__":
    if sys.argv[1] == "sink":
        sink(int(sys.argv[2]), sys.argv[3])
    elif sys.argv[1] == "blast":
        blast(sys.argv[2], int(sys.argv[3]), float(sys.argv[4]), float(sys.argv[5]))
    else:
        send(sys.argv[2], int(sys.argv[3]), sys.argv[4])
