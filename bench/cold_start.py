"""Cold start and memory as a user meets them: `panicbot lookup --catalog FILE < paste` in a fresh process.

For each catalog size, a JSONL catalog is written to a temporary folder (the real records plus
bench_lookup.py's synthetic ones, `--shape plain` or `releases`), then `python -m adapters.cli.main lookup`
is run `--runs` times, each a new process reading one header paste on stdin, with bytecode cached as on a
user's machine after the first run. Per size: wall time (min and median), CPU time (user + system), and the
process's peak RSS (GNU time's %M), whole-process, loading included; RSS per record is measured against a
one-record catalog run the same way. The embedded catalog (no `--catalog`) is measured three ways: with the
prebuilt cache off (`PANICBOT_CACHE_DIR=off`: JSONL parsed and indexed on every start), on a first start
that writes the cache (each run in a new empty cache folder) and on later starts that read it (one folder,
written by an unmeasured run). Every run has a cache folder of its own under a temporary folder (never the
user's); `--catalog` runs have the cache off.

    uv run python bench/cold_start.py [--sizes 1,1199,10000,100000] [--runs 5] [--shape plain] [--prebuilt]

With `--prebuilt`, a prebuilt catalog (`panicbot catalog build catalog-N.jsonl -o catalog-N.pbcat`) is built
per size too, and `lookup --catalog catalog-N.pbcat` is measured beside the JSONL (its RSS per record against
a one-record .pbcat; the build's time and the file's size are shown).

Targets (issue 15): the embedded catalog <= 0.5 s wall; 100k records <= 1.5 s; <= 1.5 KB RSS per record.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench import bench_lookup  # noqa: E402
from bot.records import Record  # noqa: E402

PASTE = (
    "thread 'main' panicked at crates/burn-autodiff/src/ops/module.rs:915:9:\n"
    "Can't differentiate deform conv 2d backward.\n"
    "note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace\n"
)


def write_catalog(records: list[Record], path: Path) -> None:
    with path.open("w", encoding="utf-8") as out:
        for record in records:
            line = {"record": record.model_dump(mode="json", exclude_none=True), "datasetVersion": "bench"}
            out.write(json.dumps(line) + "\n")


def run_once(catalog: Path | None, cache: str = "off") -> tuple[float, float, int]:
    """(wall s, CPU s, peak RSS bytes) of one fresh `panicbot lookup`, as GNU time reports them. Through
    /usr/bin/time: a child forked from this (large) process would count this process's pages in its peak.
    `cache` is the run's PANICBOT_CACHE_DIR (the embedded catalog's prebuilt cache; `off` by default)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = str(Path(tempfile.gettempdir()) / "panicbot-bench-pycache")
    env.pop("PANICBOT_CATALOG", None)
    env["PANICBOT_CACHE_DIR"] = cache
    with tempfile.NamedTemporaryFile("r", suffix=".time") as report:
        command = ["/usr/bin/time", "-o", report.name, "-f", "%e %U %S %M"]
        command += [sys.executable, "-m", "adapters.cli.main", "lookup"]
        if catalog is not None:
            command += ["--catalog", str(catalog)]
        done = subprocess.run(
            command,
            cwd=ROOT,
            env=env,
            input=PASTE.encode(),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            check=False,  # exit 1 is "no known record": judged below
        )
        if done.returncode not in (0, 1):
            raise RuntimeError(f"panicbot lookup exited {done.returncode} on {catalog}")
        wall, user, system, peak_kb = report.read().split()[-4:]
    return float(wall), float(user) + float(system), int(peak_kb) * 1024


def measure(catalog: Path | None, runs: int, cache: str = "off") -> dict[str, float]:
    run_once(catalog, cache)  # bytecode cached, the file in the page cache: as on a user's second run
    return summary([run_once(catalog, cache) for _ in range(runs)])


def summary(samples: list[tuple[float, float, int]]) -> dict[str, float]:
    walls, cpus, peaks = zip(*samples, strict=True)
    return {
        "wall_min": min(walls),
        "wall_median": statistics.median(walls),
        "cpu_min": min(cpus),
        "rss": statistics.median(peaks),
    }


def measure_embedded(runs: int) -> list[tuple[str, dict[str, float], str]]:
    """The embedded catalog's rows: cache off, first start (writing the cache), cached starts."""
    rows = [("embedded", measure(None, runs), "  (cache off: JSONL)")]
    with tempfile.TemporaryDirectory(prefix="panicbot-cache-") as folder:
        firsts = []
        for number in range(runs):
            cache = Path(folder) / f"first-{number}"
            firsts.append(run_once(None, str(cache)))
            written = sorted(cache.glob("*.pbcat"))
            if len(written) != 1:
                raise RuntimeError(f"a first run wrote {len(written)} cache files in {cache}")
        size = written[0].stat().st_size / 2**20
        rows.append(("emb 1st run", summary(firsts), f"  (writes the cache: {size:.1f} MB)"))
        warm = Path(folder) / "warm"
        rows.append(("emb cached", measure(None, runs, str(warm)), "  (reads it)"))
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1,1199,10000,100000")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--shape", choices=("plain", "releases"), default="plain")
    parser.add_argument("--prebuilt", action="store_true", help="also build and measure a .pbcat per size")
    args = parser.parse_args()
    sizes = sorted({1, *bench_lookup.parse_sizes(args.sizes)})
    records = bench_lookup.scaled_records(max(sizes), args.shape)
    load = os.getloadavg()[0]
    print(f"fresh `panicbot lookup` per run, {args.runs} runs, shape {args.shape}; load average {load:.2f}")
    columns = ("wall min s", "wall med s", "CPU min s", "peak RSS MB", "RSS/record")
    print(f"{'catalog':>12} " + " ".join(f"{name:>11}" for name in columns))
    for label, row, note in measure_embedded(args.runs):
        times = f"{row['wall_min']:>11.2f} {row['wall_median']:>11.2f} {row['cpu_min']:>11.2f}"
        print(f"{label:>12} {times} {row['rss'] / 2**20:>11.0f} {'':>11}{note}", flush=True)
    base_rss: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="panicbot-cold-") as folder:
        for size in sizes:
            path = Path(folder) / f"catalog-{size}.jsonl"
            write_catalog(records[:size], path)
            catalogs = [("", path)]
            note = ""
            if args.prebuilt:
                prebuilt, seconds = build_prebuilt(path)
                catalogs.append((" pbcat", prebuilt))
                note = f"  (build {seconds:.2f} s, {prebuilt.stat().st_size / 2**20:.1f} MB)"
            for kind, catalog in catalogs:
                row = measure(catalog, args.runs)
                if size == 1:
                    base_rss[kind] = row["rss"]
                per_record = "" if size == 1 else f"{(row['rss'] - base_rss[kind]) / size:,.0f} B"
                label = f"{size:,}{kind}"
                times = f"{row['wall_min']:>11.2f} {row['wall_median']:>11.2f} {row['cpu_min']:>11.2f}"
                extra = note if kind else ""
                print(f"{label:>12} {times} {row['rss'] / 2**20:>11.0f} {per_record:>11}{extra}", flush=True)
                catalog.unlink()
    return 0


def build_prebuilt(source: Path) -> tuple[Path, float]:
    """`panicbot catalog build SOURCE -o SOURCE.pbcat` in a fresh process: the file and its seconds."""
    target = source.with_suffix(".pbcat")
    started = time.perf_counter()
    command = [sys.executable, "-m", "adapters.cli.main", "catalog", "build", str(source), "-o", str(target)]
    subprocess.run(command, cwd=ROOT, check=True, stdout=subprocess.DEVNULL)
    return target, time.perf_counter() - started


if __name__ == "__main__":
    sys.exit(main())
