"""Raw results of the benchmark scripts, kept as files meant to be committed.

Every benchmark script writes, besides what it prints, one JSON file per run:

    bench/results/NAME-YYYY-MM-DDTHHMM.json     (the run's start, UTC)

holding every repetition (not only the medians), the parameters, the command,
the machine (CPU model, cores, kernel, the MPI versions, load average at the
start and the end), the git commit and the dates. BENCHMARKS.md gives the
latest figures; the history of each benchmark is these files in git.

Python scripts use it as a module:

    run = bench_results.Run("pingpong")          # at the start
    ...
    run.write(parameters={...}, runs=[...], summary={...})

Shell scripts use it as a command, with one repetition per input line of
`key=value` words (a bare word, or one ending in ':', opens a group that the
`key=value` words after it go into):

    ... | python3 scripts/bench_results.py lines NAME --started ISO_DATE \\
              --load-start "$(cat /proc/loadavg)" --command "scripts/x 3" [--param key=value]...

GRAPPE_BENCH_RESULTS=DIR writes the files to DIR instead of bench/results
(for trial runs that are not to be kept).
"""
import argparse, datetime, json, os, re, shlex, subprocess, sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def results_dir():
    return os.environ.get("GRAPPE_BENCH_RESULTS") or os.path.join(ROOT, "bench", "results")


def now_utc():
    return datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0)


def iso(date):
    return date.strftime("%Y-%m-%dT%H:%M:%SZ")


def from_iso(text):
    """A date as `date -u +%FT%TZ` prints it."""
    return datetime.datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=datetime.timezone.utc)


def output_of(cmd):
    """A command's stdout, or None if it is not installed or fails."""
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return p.stdout if p.returncode == 0 else None


def lscpu():
    fields = {}
    for line in (output_of(["lscpu"]) or "").splitlines():
        key, sep, value = line.partition(":")
        if sep:
            fields[key.strip()] = value.strip()
    return fields


def first_match(pattern, text):
    m = re.search(pattern, text or "")
    return m[1].strip() if m else None


def os_name():
    try:
        with open("/etc/os-release") as f:
            return first_match(r'PRETTY_NAME="?([^"\n]*)', f.read())
    except OSError:
        return None


def load_average():
    with open("/proc/loadavg") as f:
        return [float(x) for x in f.read().split()[:3]]


def machine():
    """What the figures depend on: the CPU, the cores, the kernel and the
    versions of the MPIs and compilers the comparisons are built with."""
    cpu = lscpu()
    mpich = output_of(["mpichversion"])
    as_int = lambda s: int(s) if s and s.isdigit() else s
    return {
        "cpu": cpu.get("Model name"),
        "cpu_family": as_int(cpu.get("CPU family")),
        "cpu_model": as_int(cpu.get("Model")),
        "cpus": os.cpu_count(),
        "cores_per_socket": as_int(cpu.get("Core(s) per socket")),
        "threads_per_core": as_int(cpu.get("Thread(s) per core")),
        "hypervisor": cpu.get("Hypervisor vendor"),
        "kernel": os.uname().release,
        "os": os_name(),
        "open_mpi": first_match(r"\(Open(?:RTE|MPI)\)\s*(\S+)", output_of(["mpirun.openmpi", "--version"])),
        "mpich": first_match(r"MPICH Version:\s*(\S+)", mpich),
        "mpich_device": first_match(r"MPICH Device:\s*(\S+)", mpich),
        "gcc": first_match(r"\) (\S+)", output_of(["gcc", "--version"])),
        "rustc": first_match(r"rustc (\S+)", output_of(["rustc", "--version"])),
    }


def git():
    commit = output_of(["git", "-C", ROOT, "rev-parse", "HEAD"])
    # Modified tracked files: the build measured is not exactly the commit.
    changed = output_of(["git", "-C", ROOT, "status", "--porcelain", "--untracked-files=no"])
    return {"commit": commit.strip() if commit else None, "modified": bool(changed and changed.strip())}


def script_command(argv=None):
    argv = sys.argv if argv is None else argv
    return shlex.join(["scripts/" + os.path.basename(argv[0]), *argv[1:]])


class Run:
    """One run of a benchmark: what is known at its start, written at its end."""

    def __init__(self, name, command=None, started=None, load_start=None):
        """`started` (a date or its ISO text) and `load_start` (/proc/loadavg's
        text) for a shell script that calls this at its end."""
        self.name = name
        self.command = command or script_command()
        self.started = from_iso(started) if isinstance(started, str) else started or now_utc()
        self.machine = machine()
        self.machine["load_average_start"] = ([float(x) for x in load_start.split()[:3]] if load_start
                                              else load_average())
        self.git = git()

    def path(self):
        stem = f"{self.name}-{self.started.strftime('%Y-%m-%dT%H%M')}"
        path = os.path.join(results_dir(), stem + ".json")
        n = 2
        while os.path.exists(path):  # two runs started in the same minute
            path = os.path.join(results_dir(), f"{stem}-{n}.json")
            n += 1
        return path

    def write(self, runs, parameters=None, summary=None):
        """Writes the file and says where on stderr; returns its path."""
        self.machine["load_average_end"] = load_average()
        doc = {
            "benchmark": self.name,
            "command": self.command,
            "started": iso(self.started),
            "finished": iso(now_utc()),
            "machine": self.machine,
            "git": self.git,
            "parameters": parameters or {},
            "runs": runs,
            "summary": summary or {},
        }
        os.makedirs(results_dir(), exist_ok=True)
        path = self.path()
        with open(path, "w") as f:
            json.dump(doc, f, indent=1, ensure_ascii=False)
            f.write("\n")
        shown = os.path.relpath(path)
        print(f"raw results: {path if shown.startswith('..') else shown}", file=sys.stderr)
        return path


def number(text):
    try:
        return int(text)
    except ValueError:
        pass
    try:
        return float(text)
    except ValueError:
        return text


def parse_line(line):
    """`a=1 threads old=2 new=3 ratio=1.5` -> {"a": 1, "threads": {"old": 2, ...}}."""
    top, group = {}, None
    for word in line.split():
        key, sep, value = word.partition("=")
        if sep:
            (group if group is not None else top)[key] = number(value)
        else:
            group = top.setdefault(word.rstrip(":"), {})
    return top


def main():
    ap = argparse.ArgumentParser(description="Writes a shell benchmark's repetitions (stdin, one per line) "
                                 "as a raw results file.")
    sub = ap.add_subparsers(dest="what", required=True)
    lines = sub.add_parser("lines")
    lines.add_argument("name")
    lines.add_argument("--command", required=True)
    lines.add_argument("--started", help="the run's start, UTC, as `date -u +%%FT%%TZ` prints it")
    lines.add_argument("--load-start", help="/proc/loadavg at the run's start (its first three fields)")
    lines.add_argument("--param", action="append", default=[], help="key=value")
    a = ap.parse_args()
    run = Run(a.name, command=a.command, started=a.started, load_start=a.load_start)
    runs = [parse_line(l) for l in sys.stdin if l.strip()]
    params = dict(p.partition("=")[::2] for p in a.param)
    run.write(runs, parameters={k: number(v) for k, v in params.items()})


if __name__ == "__main__":
    main()
