#!/usr/bin/env python3
# expiry-ratios.py FILE [BASE]: from expiry-vs-valkey-server.sh output, per round and variant the
# RSS (total/anon/file, MB) before the load and 5/15 s after it, and the
# median (min-max) over rounds of the per-round ratio variant/BASE (valkey).
import re, sys, statistics as st
base = sys.argv[2] if len(sys.argv) > 2 else "valkey"
pat = re.compile(r"round (\d+) (\S+) px=\S+: (before load|5s after load|15s after load).*RSS MB ([\d.]+) anon ([\d.]+) file ([\d.]+)")
d = {}
for l in open(sys.argv[1]):
    m = pat.search(l)
    if m:
        r, v, ph = int(m[1]), m[2], m[3]
        d[(r, v, ph)] = tuple(float(x) for x in m.group(4, 5, 6))
rounds = sorted({k[0] for k in d}); variants = sorted({k[1] for k in d})
for ph in ["before load", "5s after load", "15s after load"]:
    print(f"== {ph}")
    for v in variants:
        vals = [d[(r, v, ph)] for r in rounds if (r, v, ph) in d]
        if not vals: continue
        s = f"{v:7s} total " + " ".join(f"{x[0]:.1f}" for x in vals) + " | anon " + " ".join(f"{x[1]:.1f}" for x in vals) + " | file " + " ".join(f"{x[2]:.1f}" for x in vals)
        if v != base:
            for i, name in enumerate(["total", "anon", "file"]):
                rs = [d[(r, v, ph)][i] / d[(r, base, ph)][i] for r in rounds if (r, v, ph) in d and (r, base, ph) in d and d[(r, base, ph)][i] > 0]
                if rs:
                    s += f"\n          {name}/{base}: median {st.median(rs):.2f} ({min(rs):.2f}-{max(rs):.2f}), rounds <= 1.5: {sum(x <= 1.5 for x in rs)}/{len(rs)}"
        print(s)
