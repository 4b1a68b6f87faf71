"""Per-lookup CPU time of one code tree on a 100k catalog: an A/B tool for a busy machine.

    uv run python bench/lookup_cpu.py TREE SHAPE QUERIES [RECORDS] [--twice]   # e.g. /tmp/old releases 1000

TREE is a checkout (`git archive <commit> | tar -x -C /tmp/old`); its `bot/` and `bench/bench_lookup.py` are
used (the catalog and queries of bench_lookup.py, seeded). Each lookup is timed with `time.thread_time_ns`:
CPU time of this thread, so other processes on the machine do not inflate it the way they inflate wall time
(they still share caches: compare trees run one after the other, several times). SHAPE: plain, releases
(10 releases x 8 files a message) or escaped (patterns written by re.escape). `--twice`: each timed query is
looked up once before the timing (what the matcher makes on use, such as common words' bitmaps, is made: a
service that has run a while).
"""

import gc
import sys
import time

twice = "--twice" in sys.argv[1:]
arguments = [argument for argument in sys.argv[1:] if argument != "--twice"]
root, shape, n = arguments[0], arguments[1], int(arguments[2])
size = int(arguments[3]) if len(arguments) > 3 else 100_000
sys.path.insert(0, root)
sys.path.insert(0, root + "/bench")
import bench_lookup as b  # noqa: E402

from bot.matcher import Matcher  # noqa: E402

real, _ = b.load_real_records()
bases = [r.model_dump() for r in real]
copies = (10, 8) if shape == "releases" else (1, 1)
syn = list(
    b.generate_synthetic(
        bases, size - len(real), 20240601, releases=copies[0], files=copies[1], escaped=shape == "escaped"
    )
)
if shape == "escaped":
    real = [b.reescaped(r) for r in real]
recs = real + syn
qs = b.make_queries(recs, n, 7)
warm = b.make_queries(recs, 100, 8)
t = time.process_time()
m = Matcher(recs)
build = time.process_time() - t
for q in warm + (qs if twice else []):
    m.lookup(q.text)
gc.collect()
per = {}
allt = []
clock = time.thread_time_ns
for q in qs:
    s = clock()
    m.lookup(q.text)
    d = clock() - s
    per.setdefault(q.category, []).append(d)
    allt.append(d)


def p(v, q):
    v = sorted(v)
    return v[max(0, int(len(v) * q / 100) - 1)] / 1e6


print(
    f"{root} {shape}: build cpu {build:.2f}s; all p50 {p(allt, 50):.3f} p99 {p(allt, 99):.3f} ms; "
    + "; ".join(f"{c} p50 {p(v, 50):.3f} p99 {p(v, 99):.3f}" for c, v in per.items())
)
