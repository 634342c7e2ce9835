"""The Python package's overhead over the `obscura` command, both measured in one run.

Two workloads, each run the same way through the CLI and through Python, alternating. The CLI
is timed as a whole process (reading its input included); Python twice: the calls into
`obscura` (the conversion of Python values included), and the whole process (the
interpreter's start, `import obscura` and making the list of str too):

1. a keyword lookup from a local file of 2^20 keys: `obscura get --db F --key K` against
   `obscura.Client.open(F).get_key(K)`;
2. KKRT-PSI with 2^20 items per side over loopback: `obscura psi` on both sides (items from
   CSV files) against `obscura.psi_server` / `obscura.psi_client` on both sides (items from
   Python lists of str, converted by the bindings).

Usage (a release CLI and the release wheel installed in the running interpreter):

    python crates/obscura-py/bench/overhead.py --cli target/release/obscura [--runs 5] [--keys 1048576]

Prints the medians and ranges of each workload, and the overheads against the CLI.
"""

import argparse
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as info:
            for line in info:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def timed(command):
    """Runs `command`; returns its wall time and the seconds it printed last (if any)."""
    started = time.perf_counter()
    result = subprocess.run(command, check=True, stdout=subprocess.PIPE, text=True)
    elapsed = time.perf_counter() - started
    lines = result.stdout.split()
    return elapsed, float(lines[-1]) if lines and lines[0] == "call" else None


def timed_pair(server, client):
    """Starts `server`, then times `client` to its end (the server must end too)."""
    process = subprocess.Popen(server, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    process.stderr.readline()  # "listening on ..."
    elapsed = timed(client)
    if process.wait(timeout=600) != 0:
        raise RuntimeError(f"{server[0]} failed: {process.stderr.read()}")
    return elapsed


def figures(times) -> str:
    return f"{statistics.median(times):.3f} s ({min(times):.3f}-{max(times):.3f})"


def report(name: str, cli, python) -> None:
    cli = [wall for wall, _ in cli]
    calls = [call for _, call in python]
    processes = [wall for wall, _ in python]
    overhead = lambda times: (statistics.median(times) / statistics.median(cli) - 1) * 100  # noqa: E731
    print(f"{name}:")
    print(f"  CLI process              {figures(cli)}")
    print(f"  Python calls             {figures(calls)}  overhead {overhead(calls):+.1f}%")
    print(f"  Python process           {figures(processes)}  overhead {overhead(processes):+.1f}%")


PYTHON_LOOKUP = """
import sys, time, obscura
started = time.perf_counter()
value = obscura.Client.open(sys.argv[1]).get_key(sys.argv[2])
print("call", time.perf_counter() - started)
assert value == sys.argv[3].encode(), value
"""

PYTHON_PSI = """
import sys, time, obscura
role, address, count, offset = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
items = [f"user{i}@example.com" for i in range(offset, offset + count)]
if role == "server":
    obscura.psi_server(items, listen=address, ready=lambda a: print("listening on", a, file=sys.stderr, flush=True), progress=False)
else:
    started = time.perf_counter()
    result = obscura.psi_client(items, connect=address, progress=False)
    print("call", time.perf_counter() - started)
    assert result.intersection_size == count // 2, result
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cli", required=True, help="the obscura command (a release build)")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--keys", type=int, default=1 << 20)
    parser.add_argument("--items", type=int, default=1 << 20)
    parser.add_argument("--port", type=int, default=9461)
    args = parser.parse_args()
    import obscura

    print(f"machine: {cpu_model()}, {os.cpu_count()} cores; Python {platform.python_version()}, obscura {obscura.__version__}")
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "keys.obs")
        pairs = ((f"+1{i:010d}", f"value {i}") for i in range(args.keys))
        obscura.build_keyword(pairs, path, progress=False)
        key = f"+1{args.keys // 3:010d}"
        value = f"value {args.keys // 3}"
        cli_times, python_times = [], []
        for _ in range(args.runs):
            cli_times.append(timed([args.cli, "get", "--db", path, "--key", key]))
            python_times.append(timed([sys.executable, "-c", PYTHON_LOOKUP, path, key, value]))
        report(f"keyword lookup, local file of {args.keys} keys", cli_times, python_times)

        half = args.items // 2
        csv = {}
        for role, offset in [("server", 0), ("client", half)]:
            csv[role] = os.path.join(folder, f"{role}.csv")
            with open(csv[role], "w") as out:
                out.write("email\n")
                out.writelines(f"user{i}@example.com\n" for i in range(offset, offset + args.items))
        address = f"127.0.0.1:{args.port}"
        cli_times, python_times = [], []
        for _ in range(args.runs):
            cli = [args.cli, "psi", "--protocol", "kkrt", "--column", "email"]
            cli_times.append(timed_pair(
                cli + ["--role", "server", "--listen", address, "--input", csv["server"]],
                cli + ["--role", "client", "--connect", address, "--input", csv["client"]],
            ))
            python_times.append(timed_pair(
                [sys.executable, "-c", PYTHON_PSI, "server", address, str(args.items), "0"],
                [sys.executable, "-c", PYTHON_PSI, "client", address, str(args.items), str(half)],
            ))
        report(f"KKRT-PSI, {args.items} items per side", cli_times, python_times)


if __name__ == "__main__":
    main()
