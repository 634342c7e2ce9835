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

    python crates/obscura-py/bench/repeated.py --cli target/release/obscura [--calls 9] [--rounds 5] [--dir D]

The bench runs `--rounds` times, each run followed by `--calls` later calls from each client, so
each ratio sets calls against a bench run of the same minutes on a noisy machine. Prints JSON: for
each workload and place, the client's opening and first call in seconds, the later calls' median
and range, and the per-round ratios of their median to the bench's sum and to the bench's own
later lookups through the same client session in Rust (its `repeated` figures, same place), each
as median and range, with the memory bandwidth each bench run measured; over the service, each
call's split and the service's page faults during it.
"""

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

import obscura

RECORDS = 1 << 20
RECORD_BYTES = 1024
KEY_BYTES = 32
SETTLE_SECONDS = 5


def bench(cli: str, preset: str, *extra: str) -> dict:
    """`obscura bench PRESET --json`'s report (the first, for presets that print several)."""
    out = subprocess.run([cli, "bench", preset, "--json", *extra], check=True, capture_output=True, text=True).stdout
    report = json.loads(out)
    return report[0] if isinstance(report, list) else report


def lookup_seconds(report: dict) -> float:
    """What one fresh query costs the bench: making it, answering it, decoding the answer."""
    seconds = report["seconds"]
    return seconds["query_fresh"] + seconds["answer"] + seconds["decode"]


def seconds_of(call, i: int) -> float:
    """The seconds `call(i)` takes."""
    started = time.perf_counter()
    call(i)
    return time.perf_counter() - started


def spread(values: list) -> dict:
    """The median and range of `values`."""
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


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

    def query_seconds(self) -> float:
        """Seconds the service has spent on `/query` requests so far, from receiving a request to
        its answer (its metrics)."""
        text = urllib.request.urlopen(self.url + "/metrics").read().decode()
        match = re.search(r'obscura_request_seconds_sum\{endpoint="query"\} (\S+)', text)
        if match is None:
            raise RuntimeError("the service's metrics have no /query latency")
        return float(match.group(1))

    def page_faults(self) -> int:
        """The service process's minor page faults so far (Linux), each a fresh page of memory."""
        with open(f"/proc/{self.process.pid}/stat") as stat:
            return int(stat.read().rsplit(")", 1)[1].split()[7])

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=60)


def measure(cli: str, path: str, name: str, preset: list, lookup, calls: int, rounds: int) -> dict:
    """Timings of `lookup(client, i)` from the file and over `obscura serve`: each client's
    opening and first call, then `rounds` rounds of the bench's `preset` followed by `calls`
    later calls of each client, so each round's ratio sets later calls against a bench run made
    just before them. Over the service, each later call is also split into the service's part
    (request received to answer sent, from its metrics) and the rest (the query made and sent,
    the answer received and decoded), and the service's page faults during the call counted."""
    started = time.perf_counter()
    local = obscura.Client.open(path)
    clients = {"local": {"open": time.perf_counter() - started}}
    served = Served(cli, path)
    try:
        started = time.perf_counter()
        remote = obscura.Client.connect(served.url, name, cache_dir=False)
        clients["served"] = {"open": time.perf_counter() - started}
        places = {"local": local, "served": remote}
        for place, client in places.items():
            clients[place]["first"] = seconds_of(lambda i: lookup(client, i), 0)
        benches, bandwidth = [], []
        later, ratios = {p: [] for p in places}, {p: [] for p in places}
        over_rust, rust_ratios = {p: [] for p in places}, {p: [] for p in places}
        service, rest, faults = [], [], []
        for run in range(rounds):
            report = bench(cli, *preset)
            benches.append(lookup_seconds(report))
            bandwidth.append(report["bandwidth_gbs"])
            for place in places:
                rust_ratios[place].append(report["repeated"]["later_over_steps"][place]["median"])
            # The bench process's gigabyte of memory is returned to the system after it exits;
            # the calls start once that is done.
            time.sleep(SETTLE_SECONDS)
            for place, client in places.items():
                times = []
                for i in range(1 + run * calls, 1 + (run + 1) * calls):
                    if place != "served":
                        times.append(seconds_of(lambda i: lookup(client, i), i))
                        continue
                    before, faulted = served.query_seconds(), served.page_faults()
                    times.append(seconds_of(lambda i: lookup(client, i), i))
                    service.append(served.query_seconds() - before)
                    faults.append(served.page_faults() - faulted)
                    rest.append(times[-1] - service[-1])
                later[place] += times
                ratios[place].append(statistics.median(times) / benches[-1])
                over_rust[place].append(statistics.median(times) / report["repeated"]["later"][place]["median"])
    finally:
        served.stop()
    result: dict = {
        "bench_lookup": spread(benches),
        "bandwidth_gbs": bandwidth,
        "bench_client_over_steps": {place: spread(rust_ratios[place]) for place in places},
    }
    for place in places:
        result[place] = {
            **clients[place],
            "later": spread(later[place]),
            "later_over_bench": spread(ratios[place]),
            "later_over_bench_client": spread(over_rust[place]),
        }
    result["served"]["service"] = spread(service)
    result["served"]["client"] = spread(rest)
    result["served"]["page_faults"] = spread(faults)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cli", required=True, help="the obscura binary")
    parser.add_argument("--calls", type=int, default=9, help="later calls timed after the first")
    parser.add_argument("--rounds", type=int, default=5, help="bench runs, each followed by the later calls")
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
    get = lambda client, i: client.get(i * 7919 % RECORDS)  # noqa: E731
    results["simple-1g"] = measure(args.cli, index, "db", ["simple-1g"], get, args.calls, args.rounds)

    keyword = os.path.join(folder, "keys.obs")
    keys = [i.to_bytes(8, "little") * (KEY_BYTES // 8) for i in range(RECORDS)]
    if not os.path.exists(keyword):
        pairs = ((key, os.urandom(RECORD_BYTES)) for key in keys)
        obscura.build_keyword(pairs, keyword, arity=4, progress=False)
    get_key = lambda client, i: client.get_key(keys[i * 7919 % RECORDS])  # noqa: E731
    preset = ["chalamet", "--arity", "4"]
    results["chalamet"] = measure(args.cli, keyword, "keys", preset, get_key, args.calls, args.rounds)
    json.dump(results, sys.stdout, indent=2)
    print()


if __name__ == "__main__":
    main()
