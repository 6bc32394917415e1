"""Real applications for the proxy daemon's tests (run inside the emulator's
namespaces). One process serves every SPEC (PORT:MODE[:ARG]) forever, one thread
per connection, and with `--fetch-after SECS HOST PORT OUT` also fetches once:

proxy_apps.py serve SPEC... [--fetch-after SECS HOST PORT OUT]   modes:
    file PATH      send PATH, then close at once (no waiting for the reader)
    echo           send back everything received; close after the client's FIN
    request PATH   read until the client's FIN (half-close), then send PATH, close
    sink DIR       write what arrives to DIR/<n>.bin; close after the client's FIN
    reset N        send N bytes, then reset (SO_LINGER 0)
    hold DIR       read and discard; a reset by the client leaves DIR/reset-<n>

Clients (exit 0 on success, 1 with a line on stderr otherwise):

proxy_apps.py fetch HOST PORT OUT        read until EOF into OUT
proxy_apps.py put HOST PORT IN           send IN, half-close, wait for EOF
proxy_apps.py echo HOST PORT IN OUT      send IN, half-close, read the echo into OUT
proxy_apps.py request HOST PORT OUT      send a line, half-close, read the reply into OUT
proxy_apps.py reset-seen HOST PORT       read until the connection is reset (exit 0) or ends (1)
proxy_apps.py reset-after HOST PORT N    send N bytes, then reset the connection
proxy_apps.py refused HOST PORT          exit 0 if the connection is refused (RST), 1 if accepted
proxy_apps.py parallel HOST PORT K OUT [--from A,B,...]
                                         K concurrent fetches, OUT.<i> (fetch i from
                                         source address i mod the list's length)
"""

import socket
import struct
import sys
import threading
import time


def connect(host: str, port: int, tries: float = 20.0, src: str | None = None) -> socket.socket:
    deadline = time.monotonic() + tries
    while True:
        try:
            return socket.create_connection((host, port), timeout=120, source_address=(src, 0) if src else None)
        except ConnectionRefusedError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def read_all(c: socket.socket) -> bytes:
    out = bytearray()
    while True:
        b = c.recv(65536)
        if not b:
            return bytes(out)
        out += b


def serve(port: int, mode: str, arg: str | None) -> None:
    """Serves one port forever (call in a thread)."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("0.0.0.0", port))
    s.listen(256)
    n = 0

    def one(c: socket.socket, k: int) -> None:
        try:
            if mode == "file":
                c.sendall(open(arg, "rb").read())
            elif mode == "echo":
                while True:
                    b = c.recv(65536)
                    if not b:
                        break
                    c.sendall(b)
            elif mode == "request":
                read_all(c)
                c.sendall(open(arg, "rb").read())
            elif mode == "sink":
                peer = c.getpeername()[0]
                data = read_all(c)
                with open(f"{arg}/{k}.bin", "wb") as f:
                    f.write(data)
                with open(f"{arg}/{k}.peer", "w") as f:
                    f.write(peer)
            elif mode == "reset":
                c.sendall(bytes(int(arg)))
                time.sleep(0.5)
                c.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            elif mode == "hold":
                try:
                    read_all(c)
                except ConnectionResetError:
                    open(f"{arg}/reset-{k}", "w").close()
        except OSError:
            pass
        finally:
            c.close()

    while True:
        c, _ = s.accept()
        threading.Thread(target=one, args=(c, n), daemon=True).start()
        n += 1


def main(argv: list[str]) -> int:
    cmd = argv[0]
    if cmd == "serve":
        specs, fetch = argv[1:], None
        if "--fetch-after" in specs:
            i = specs.index("--fetch-after")
            specs, fetch = specs[:i], specs[i + 1 :]
        for spec in specs:
            port, mode, *arg = spec.split(":", 2)
            threading.Thread(target=serve, args=(int(port), mode, arg[0] if arg else None), daemon=True).start()
        if fetch:
            time.sleep(float(fetch[0]))
            c = connect(fetch[1], int(fetch[2]))
            open(fetch[3], "wb").write(read_all(c))
            c.close()
        threading.Event().wait()
        return 0
    host, port = argv[1], int(argv[2])
    if cmd == "refused":
        try:
            c = socket.create_connection((host, port), timeout=30)
        except ConnectionRefusedError:
            return 0
        c.close()
        print(f"{host}:{port} accepted the connection", file=sys.stderr)
        return 1
    if cmd == "parallel":
        k, out = int(argv[3]), argv[4]
        srcs = argv[6].split(",") if argv[5:6] == ["--from"] else [None]
        errs: list[str] = []

        def get(i: int) -> None:
            try:
                c = connect(host, port, src=srcs[i % len(srcs)])
                data = read_all(c)
                c.close()
                open(f"{out}.{i}", "wb").write(data)
            except OSError as e:
                errs.append(f"{i}: {e}")

        ts = [threading.Thread(target=get, args=(i,)) for i in range(k)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        if errs:
            print(f"{len(errs)} fetches failed: {errs[:3]}", file=sys.stderr)
        return 1 if errs else 0
    c = connect(host, port)
    if cmd == "fetch":
        open(argv[3], "wb").write(read_all(c))
    elif cmd == "put":
        c.sendall(open(argv[3], "rb").read())
        c.shutdown(socket.SHUT_WR)
        read_all(c)
    elif cmd == "echo":
        data = open(argv[3], "rb").read()
        got = bytearray()

        errs: list[str] = []

        def reader() -> None:
            try:
                got.extend(read_all(c))
            except OSError as e:
                errs.append(str(e))

        t = threading.Thread(target=reader)
        t.start()
        c.sendall(data)
        c.shutdown(socket.SHUT_WR)
        t.join()
        open(argv[4], "wb").write(bytes(got))
        if errs:
            print(f"echo: {errs[0]}", file=sys.stderr)
            return 1
    elif cmd == "request":
        c.sendall(b"GET /\r\n")
        c.shutdown(socket.SHUT_WR)
        open(argv[3], "wb").write(read_all(c))
    elif cmd == "reset-seen":
        try:
            read_all(c)
        except ConnectionResetError:
            return 0
        print("the connection ended without a reset", file=sys.stderr)
        return 1
    elif cmd == "reset-after":
        c.sendall(bytes(int(argv[3])))
        time.sleep(1.0)
        c.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    c.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
