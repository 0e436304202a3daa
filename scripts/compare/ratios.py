#!/usr/bin/env python3
# ratios.py FILE (the CSV of bench-vs-valkey-benchmark.sh): per-round ratios of each rdmapool tool's req/s (and p50) over valkey-benchmark's, median (min-max)
import sys, csv, statistics, collections
rows = collections.defaultdict(dict)  # (round, test) -> tool -> (rps, p50)
tools = []
for line in open(sys.argv[1]):
    if not line[0].isdigit(): continue
    f = next(csv.reader([line]))
    r, tool, test, rps, p50 = f[0], f[1], f[2], float(f[3]), float(f[6])
    rows[(r, test)][tool] = (rps, p50)
    if tool != 'vb' and tool not in tools: tools.append(tool)
for test in ['SET', 'GET']:
    vbs = [v['vb'][0] for (r, t), v in rows.items() if t == test and 'vb' in v]
    if not vbs: continue
    print(f"{test}: valkey-benchmark median {statistics.median(vbs):.0f} req/s over {len(vbs)} rounds")
    for tool in tools:
        rat = [v[tool][0]/v['vb'][0] for (r, t), v in rows.items() if t == test and tool in v and 'vb' in v]
        p50 = [v[tool][1]/v['vb'][1] for (r, t), v in rows.items() if t == test and tool in v and 'vb' in v]
        won = sum(1 for x in rat if x >= 1)
        print(f"  {tool}: req/s ratio {statistics.median(rat):.2f} ({min(rat):.2f}-{max(rat):.2f}) won {won}/{len(rat)}; p50 ratio {statistics.median(p50):.2f}")
