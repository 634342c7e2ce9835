"""Repeated lookups from one Python `Client`: what the first and the later calls cost, against
what `obscura bench` reports for one query's parts on the same machine, in the same run.

A `Client` decodes the public setup once and keeps the scheme's client, so from the second call
on a lookup should cost only making the query, answering it and decoding the answer. Two
workloads, each from a local file and over `obscura serve` on loopback:

1. `Client.get` on a `simple-1g`-shaped index database (2^20 records of 1 KiB, square layout),
   against `obscura bench simple-1g`'s `query_fresh + answer + decode`;
2. `Client.get_key` on a keyword database of 2^20 32-byte keys with 1 KiB values, against
   `obscura bench chalamet --arity 4`'s `query_fresh + answer + decode`.

Usage (the CLI and the wheel built from the same tree; `--threads` as the bench's):

    python crates/obscura-py/bench/repeated.py --cli target/release/obscura [--calls 9] [--dir D]

Prints JSON: for each workload and place, the first call's seconds, the later calls' median and
range, and their ratio to the bench's sum.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import obscura

RECORDS = 1 << 20
RECORD_BYTES = 1024
KEY_BYTES = 32


def bench(cli: str, preset: str, *extra: str) -> dict:
    """`obscura bench PRESET --json`'s report (the first, for presets that print several)."""
    out = subprocess.run([cli, "bench", preset, "--json", *extra], check=True, capture_output=True, text=True).stdout
    report = json.loads(out)
    return report[0] if isinstance(report, list) else report


def lookup_seconds(report: dict) -> float:
    """What one fresh query costs the bench: making it, answering it, decoding the answer."""
    seconds = report["seconds"]
    return seconds["query_fresh"] + seconds["answer"] + seconds["decode"]


def timed(call, calls: int) -> dict:
    """The first call's seconds and the later calls' median and range."""
    started = time.perf_counter()
    call(0)
    first = time.perf_counter() - started
    later = []
    for i in range(1, calls + 1):
        started = time.perf_counter()
        call(i)
        later.append(time.perf_counter() - started)
    return {"first": first, "later_median": statistics.median(later), "later_min": min(later), "later_max": max(later)}


class Served:
    """`obscura serve FILE` on a free loopback port."""

    def __init__(self, cli: str, path: str):
        self.process = subprocess.Popen([cli, "serve", path, "--listen", "127.0.0.1:0"], stderr=subprocess.PIPE, text=True)
        for line in self.process.stderr:
            if line.startswith("serving on "):
                self.url = line.split()[2]
                break
        else:
            raise RuntimeError("obscura serve did not start")

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=60)


def measure(cli: str, path: str, name: str, lookup, calls: int) -> dict:
    """Timings of `lookup(client, i)` from the file and over `obscura serve`."""
    started = time.perf_counter()
    local = obscura.Client.open(path)
    result = {"local": {"open": time.perf_counter() - started, **timed(lambda i: lookup(local, i), calls)}}
    del local
    served = Served(cli, path)
    try:
        started = time.perf_counter()
        remote = obscura.Client.connect(served.url, name, cache_dir=False)
        opened = time.perf_counter() - started
        result["served"] = {"open": opened, **timed(lambda i: lookup(remote, i), calls)}
    finally:
        served.stop()
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cli", required=True, help="the obscura binary")
    parser.add_argument("--calls", type=int, default=9, help="later calls timed after the first")
    parser.add_argument("--dir", help="folder for the databases (default: a temporary one)")
    args = parser.parse_args()
    folder = args.dir or tempfile.mkdtemp(prefix="obscura-repeated-")
    results = {"threads": os.cpu_count()}

    index = os.path.join(folder, "db.obs")
    if not os.path.exists(index):
        records = os.path.join(folder, "records.bin")
        with open(records, "wb") as out:
            for _ in range(RECORDS * RECORD_BYTES // (64 << 20)):
                out.write(os.urandom(64 << 20))
        subprocess.run([args.cli, "build", "--input", records, "--record-size", str(RECORD_BYTES), "--out", index], check=True)
        os.remove(records)
    bench_index = bench(args.cli, "simple-1g")
    results["simple-1g"] = {
        "bench_lookup": lookup_seconds(bench_index),
        **measure(args.cli, index, "db", lambda client, i: client.get(i * 7919 % RECORDS), args.calls),
    }

    keyword = os.path.join(folder, "keys.obs")
    keys = [i.to_bytes(8, "little") * (KEY_BYTES // 8) for i in range(RECORDS)]
    if not os.path.exists(keyword):
        pairs = ((key, os.urandom(RECORD_BYTES)) for key in keys)
        obscura.build_keyword(pairs, keyword, arity=4, progress=False)
    bench_keyword = bench(args.cli, "chalamet", "--arity", "4")
    results["chalamet"] = {
        "bench_lookup": lookup_seconds(bench_keyword),
        **measure(args.cli, keyword, "keys", lambda client, i: client.get_key(keys[i * 7919 % RECORDS]), args.calls),
    }
    for workload in ("simple-1g", "chalamet"):
        result = results[workload]
        for place in ("local", "served"):
            result[place]["later_over_bench"] = result[place]["later_median"] / result["bench_lookup"]
    json.dump(results, sys.stdout, indent=2)
    print()


if __name__ == "__main__":
    main()
