#!/usr/bin/env python3
"""valkey-benchmark against `rdmapool serve` (each TCP engine) and valkey-server.

usage: scripts/compare/serve-vs-valkey-server.py RDMAPOOL_BINARY [ROUNDS] [--idle N] [--cases c1,c50,c1000,p16] [--engines gnet,netpoll]

All servers run at once on their own ports (idle while another is measured).
Each round runs every case against every server, the order of the servers
reversed every other round. Prints each run's requests/s, then per case and
test the median (min-max) over rounds of ours/valkey-server's ratio within a
round. --idle N opens N idle connections (one PING each) to each server in
turn and reports the RSS growth per connection.
"""
import os, resource, socket, statistics, subprocess, sys, time

def free_port():
    s = socket.socket(); s.bind(("127.0.0.1", 0)); p = s.getsockname()[1]; s.close(); return p

def rss_kb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])

def wait_port(port, proc, timeout=10):
    end = time.time() + timeout
    while time.time() < end:
        if proc.poll() is not None:
            sys.exit(f"server on {port} exited: {proc.returncode}")
        try:
            socket.create_connection(("127.0.0.1", port), 0.2).close(); return
        except OSError:
            time.sleep(0.05)
    sys.exit(f"server on {port} did not start")

CASES = {
    "c1": "-c 1 -n 20000",
    "c50": "-c 50 -n 100000",
    "c1000": "-c 1000 -n 100000",
    "p16": "-c 10 -P 16 -n 400000",
}

def bench(port, case):
    out = subprocess.run(["valkey-benchmark", "-h", "127.0.0.1", "-p", str(port), *CASES[case].split(),
                          "-t", "set,get", "--csv"], capture_output=True, text=True, timeout=600).stdout
    rps = {}
    for line in out.splitlines()[1:]:
        f = [x.strip('"') for x in line.split(",")]
        if len(f) > 1:
            rps[f[0]] = float(f[1])
    return rps

def idle(port, pid, n):
    before = rss_kb(pid)
    conns = []
    for _ in range(n):
        s = socket.create_connection(("127.0.0.1", port))
        s.sendall(b"*1\r\n$4\r\nPING\r\n")
        if s.recv(64) != b"+PONG\r\n":
            sys.exit("no PONG")
        conns.append(s)
    time.sleep(2)
    after = rss_kb(pid)
    for s in conns:
        s.close()
    time.sleep(1)
    return (after - before) * 1024 / n

def main():
    args = sys.argv[1:]
    binary = args.pop(0)
    rounds, n_idle = 5, 0
    cases = list(CASES)
    engines = ["gnet", "netpoll"]
    while args:
        a = args.pop(0)
        if a == "--idle": n_idle = int(args.pop(0))
        elif a == "--cases": cases = args.pop(0).split(",")
        elif a == "--engines": engines = args.pop(0).split(",")
        else: rounds = int(a)
    resource.setrlimit(resource.RLIMIT_NOFILE, (resource.getrlimit(resource.RLIMIT_NOFILE)[1],) * 2)
    servers = {}
    p = free_port()
    servers["valkey"] = (p, subprocess.Popen(["valkey-server", "--port", str(p), "--bind", "127.0.0.1", "--save", "",
        "--appendonly", "no", "--maxclients", "10100"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    for e in engines:
        p = free_port()
        servers[e] = (p, subprocess.Popen([binary, "serve", "--port", str(p), "--tcp-engine", e],
                                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    try:
        for p, proc in servers.values():
            wait_port(p, proc)
        print("load average at start:", open("/proc/loadavg").read().strip())
        names = list(servers)
        res = {}  # (case, test, server) -> [rps per round]
        for r in range(rounds):
            order = names if r % 2 == 0 else names[::-1]
            for case in cases:
                for name in order:
                    for test, v in bench(servers[name][0], case).items():
                        res.setdefault((case, test, name), []).append(v)
                        print(f"round {r+1} {case} {name} {test} {v:.0f}", flush=True)
        print("load average at end:", open("/proc/loadavg").read().strip())
        print("\ncase | test | valkey-server req/s (median) | " + " | ".join(f"{e}/valkey median (min-max), rounds >= 0.8" for e in engines))
        for case in cases:
            for test in ("SET", "GET"):
                vk = res[(case, test, "valkey")]
                cols = []
                for e in engines:
                    rs = [o / v for o, v in zip(res[(case, test, e)], vk)]
                    cols.append(f"{statistics.median(rs):.2f} ({min(rs):.2f}-{max(rs):.2f}), {sum(x >= 0.8 for x in rs)}/{len(rs)}")
                print(f"{CASES[case]} | {test} | {statistics.median(vk):.0f} | " + " | ".join(cols))
        if n_idle:
            print(f"\nRSS growth per idle connection ({n_idle} connections, one PING each):")
            for name, (p, proc) in servers.items():
                print(f"  {name}: {idle(p, proc.pid, n_idle):.0f} bytes", flush=True)
    finally:
        for _, proc in servers.values():
            proc.terminate()
        for _, proc in servers.values():
            proc.wait()

main()
