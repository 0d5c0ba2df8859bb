"""Where the time goes: a benchmark run under py-spy, its samples folded into pipeline stages.

Usage (one command per benchmark; ``BENCH_QUICK=1`` is set unless ``--full``)::

    nice -n 10 .venv/bin/python benchmarks/profile.py ingest --case batched
    nice -n 10 .venv/bin/python benchmarks/profile.py ingest --case single
    nice -n 10 .venv/bin/python benchmarks/profile.py alert_latency
    .venv/bin/python benchmarks/profile.py ingest --from /tmp/profile-ingest   # fold again, no run

The benchmark is run three times under ``py-spy record --format raw --subprocesses`` (py-spy
attaches to other processes only as root, or where ``ptrace_scope`` allows it):

wall
    ``--idle``: every thread at every sample, waiting or not.
cpu
    the default: only threads that are running on a core.
gil
    ``--gil``: only the thread holding the GIL.

Each sample's stack is put in one stage by its innermost frame that a rule of
:data:`STAGES` knows (a psycopg frame under the writer's COPY is "COPY"; a paho frame under
the collector's network loop is "receive"); a stack with no pipeline frame at all (the
benchmark's publisher, its peers, the interpreter starting) is "outside the pipeline" and
left out of the shares. Printed per stage: wall [thread-seconds per second of the pipeline's
run: 1.0 is a thread there all the time], share of the pipeline's CPU samples [%], and share
of the pipeline's GIL samples [%] with the GIL held [fraction of the pipeline's run]: when the
stages' GIL fractions add up to near 1.0, the GIL is the wall and one stage waits for another.

The folded table goes to stdout as Markdown (for ``benchmarks/README.md``); the raw samples
stay in ``--out`` (default ``/tmp/profile-<benchmark>``).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
MODES = {"wall": ["--idle"], "cpu": [], "gil": ["--gil"]}
#: samples a second [Hz]
RATE = 100

#: (stage, file suffix, function names or None for any): the first rule that the innermost
#: matching frame fits decides. Frames of libraries (paho, psycopg, numpy, json) match no
#: rule: their caller in the pipeline decides.
STAGES = [
    ("acknowledge", "ingest/mqtt/collector.py", {"_ack", "_ack_parked", "on_durable"}),
    ("receive", "ingest/mqtt/collector.py", {"_network_loop", "_read_held", "_connect", "_on_message",
                                               "_release_due"}),
    ("normalise", "ingest/mqtt/collector.py", {"_convert_singles"}),
    ("parse", "ingest/mqtt/collector.py", {"_handle", "_handle_decoded", "_dead", "_maintenance"}),
    ("batch", "ingest/mqtt/collector.py", None),
    ("receive", "ingest/mqtt/readahead.py", None),
    ("parse", "ingest/mqtt/payload.py", None),
    ("parse", "ingest/mqtt/formats.py", None),
    ("parse", "ingest/mqtt/topics.py", None),
    ("normalise", "ingest/normalise.py", None),
    ("normalise", "foundation/units.py", None),
    ("batch", "ingest/sink.py", None),
    ("batch", "ingest/batch.py", None),
    ("COPY", "ingest/writer.py", {"copy_binary", "copy_rows", "store_readings", "_write_in"}),
    ("commit", "ingest/writer.py", {"_write", "_commit", "_connection"}),
    ("commit", "ingest/pipelined.py", {"_copy_and_commit"}),
    ("writer (other)", "ingest/writer.py", None),
    ("writer (other)", "ingest/pipelined.py", None),
    ("spool", "ingest/spool.py", None),
    ("supervision", "ingest/supervise.py", None),
    ("evaluate", "limits/", None),
    ("evaluate", "alerts/episodes.py", None),
    ("evaluate", "alerts/health.py", None),
    ("evaluate", "alerts/arrivals.py", None),
    ("evaluate", "alerts/stored.py", None),
    ("evaluate", "sewerwatch/pipeline.py", {"_evaluate", "_evaluate_batch", "tap", "_take_same_kind",
                                            "_merge_parts"}),
    ("event loop", "sewerwatch/pipeline.py", {"_main", "run", "run_until_signalled", "main"}),
    ("deliver", "alerts/channels.py", None),
    ("deliver", "alerts/outbox.py", None),
    ("alert", "alerts/", None),
    ("outside the pipeline", "alerts/catchers.py", None),      # the benchmark's webhook catcher
    ("outside the pipeline", "sewerwatch/services/", None),    # the scratch cluster and broker
    ("outside the pipeline", "sewerwatch/db/", None),          # their schema
    ("pipeline (other)", "sewerwatch/", None),
    ("pipeline (other)", "ingest/", None),
]
OUTSIDE = "outside the pipeline"
ORDER = ["receive", "parse", "normalise", "batch", "COPY", "commit", "acknowledge", "writer (other)", "spool",
         "evaluate", "alert", "deliver", "event loop", "supervision", "pipeline (other)"]
_FRAME = re.compile(r"^(?P<func>.*) \((?P<file>[^()]*?)(?::\d+)?\)$")


#: the benchmark script's file name as py-spy shows it (its frames are the harness's)
SCRIPT = {"name": ""}


def stage_of(stack: str) -> str:
    """The stage of one folded stack (``frame;frame;...``, root first).

    A stack with a frame of the benchmark script itself (its main thread: publishing, the
    peers) or of a module being imported (``<module>``) is outside the pipeline whatever it
    calls (the raw COPY peer calls the writer's ``copy_binary``)."""
    frames = [(m["func"], m["file"].replace("\\", "/")) for m in map(_FRAME.match, map(str.strip, stack.split(";")))
              if m]
    if any(f == SCRIPT["name"] or func == "<module>" for func, f in frames):
        return OUTSIDE
    for func, path in reversed(frames):
        func = func.rsplit(".", 1)[-1]          # "MqttCollector._ack" -> "_ack"
        for stage, suffix, funcs in STAGES:
            if (path.endswith(suffix) or f"/{suffix}" in path or path.startswith(suffix)) and \
                    (funcs is None or func in funcs):
                return stage
    return OUTSIDE


def fold(path: Path) -> Counter:
    """Samples per stage of one raw py-spy file (lines ``stack count``)."""
    counts: Counter = Counter()
    for line in path.read_text(errors="replace").splitlines():
        stack, _, n = line.rpartition(" ")
        if stack and n.isdigit():
            counts[stage_of(stack)] += int(n)
    return counts


def record(benchmark: str, mode: str, out: Path, full: bool, case: str | None = None) -> float:
    """Run ``benchmarks/<benchmark>.py`` under py-spy in ``mode``; the run's seconds."""
    spy = shutil.which("py-spy", path=str(Path(sys.executable).parent)) or shutil.which("py-spy")
    if spy is None:
        raise SystemExit("py-spy is not installed: pip install -e '.[dev]' installs it")
    env = dict(os.environ)
    if not full:
        env["BENCH_QUICK"] = "1"
    if case:
        env["BENCH_CASES"] = case
    cmd = [spy, "record", "--format", "raw", "--rate", str(RATE), "--subprocesses", "--threads", "-o",
           str(out / f"{mode}.txt"), *MODES[mode], "--", sys.executable, str(HERE / f"{benchmark}.py")]
    t0 = time.monotonic()
    with open(out / f"{mode}.log", "w") as log:
        rc = subprocess.call(cmd, env=env, stdout=log, stderr=subprocess.STDOUT)
    seconds = time.monotonic() - t0
    (out / f"{mode}.seconds").write_text(f"{seconds:.2f}\n")
    if rc:
        raise SystemExit(f"the {mode} run failed (exit {rc}); its output is in {out / f'{mode}.log'}")
    return seconds


def table(out: Path) -> str:
    """The Markdown table of the runs' samples in ``out``.

    Every figure is per second of the pipeline's run (:func:`_pipeline_seconds`): wall
    [thread-seconds: 1.0 is one thread in the stage all the time, waiting or not], CPU
    [cores: 1.0 is one core busy in the stage], GIL [fraction of the time the stage held it];
    and the stage's share of the pipeline's CPU and GIL samples [%].
    """
    folded = {m: fold(out / f"{m}.txt") for m in MODES if (out / f"{m}.txt").exists()}
    if not folded:
        raise SystemExit(f"no samples in {out}")
    runs = {m: _pipeline_seconds(out / f"{m}.txt") for m in folded}
    total = {m: sum(v for k, v in c.items() if k != OUTSIDE) for m, c in folded.items()}

    def per_s(mode: str, stage: str | None) -> str:
        if mode not in folded or not runs[mode]:
            return "–"
        n = total[mode] if stage is None else folded[mode].get(stage, 0)
        return f"{n / RATE / runs[mode]:.2f}"

    def share(mode: str, stage: str) -> str:
        if mode not in folded or not total[mode]:
            return "–"
        return f"{100 * folded[mode].get(stage, 0) / total[mode]:.0f}"

    lines = ["| stage | wall [thread-s/s] | CPU [cores] | CPU share [%] | GIL held [fraction] | GIL share [%] |",
             "|---|---|---|---|---|---|"]
    for s in [s for s in ORDER if any(c.get(s) for c in folded.values())]:
        lines.append(f"| {s} | {per_s('wall', s)} | {per_s('cpu', s)} | {share('cpu', s)} | {per_s('gil', s)} "
                     f"| {share('gil', s)} |")
    lines.append(f"| all stages | {per_s('wall', None)} | {per_s('cpu', None)} | 100 | {per_s('gil', None)} | 100 |")
    spans = ", ".join(f"{m} {runs[m]:.1f} s" for m in folded)
    return "\n".join(lines) + f"\n\nthe pipeline ran: {spans} (as the benchmark timed it)\n"


#: the benchmark's own line saying how long the measured part took: ingest's "collector: N
#: readings stored in X s", alert_latency's "background load: N readings in X s"
_SPAN = re.compile(r"(?:stored|readings) in ([0-9.]+) s")


def _pipeline_seconds(path: Path) -> float:
    """How long the pipeline was measured in one run [s]: what the benchmark printed (the sum
    of its lines of :data:`_SPAN`), else the most wall samples of one pipeline thread."""
    log = path.with_suffix(".log")
    if log.exists():
        spans = [float(x) for x in _SPAN.findall(log.read_text(errors="replace"))]
        if spans:
            return sum(spans)
    wall = path.with_name("wall.txt")
    path = wall if wall.exists() else path
    per_thread: Counter = Counter()
    for line in path.read_text(errors="replace").splitlines():
        stack, _, n = line.rpartition(" ")
        if not (stack and n.isdigit()) or stage_of(stack) == OUTSIDE:
            continue
        thread = ";".join(f for f in stack.split(";")[:2] if f.startswith(("process", "thread")))
        per_thread[thread] += int(n)
    return max(per_thread.values(), default=0) / RATE


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("benchmark", help="a script of benchmarks/ without .py: ingest, alert_latency, ...")
    ap.add_argument("--out", type=Path, help="folder for the raw samples (default /tmp/profile-<benchmark>)")
    ap.add_argument("--modes", default="wall,cpu,gil", help="which runs, comma-separated (wall, cpu, gil)")
    ap.add_argument("--case", help="the benchmark's case alone (BENCH_CASES): ingest's batched or single")
    ap.add_argument("--full", action="store_true", help="the full benchmark, not BENCH_QUICK=1")
    ap.add_argument("--from", dest="only_fold", type=Path, help="fold the samples of an earlier run; no run")
    a = ap.parse_args(argv)
    SCRIPT["name"] = f"{a.benchmark}.py"
    if a.only_fold:
        print(table(a.only_fold))
        return
    if not (HERE / f"{a.benchmark}.py").exists():
        raise SystemExit(f"no benchmark {a.benchmark!r} in {HERE}")
    out = a.out or Path(f"/tmp/profile-{a.benchmark}" + (f"-{a.case}" if a.case else ""))
    out.mkdir(parents=True, exist_ok=True)
    for mode in a.modes.split(","):
        if mode not in MODES:
            raise SystemExit(f"unknown mode {mode!r} (wall, cpu, gil)")
        load = os.getloadavg()
        secs = record(a.benchmark, mode, out, a.full, a.case)
        print(f"{mode}: {secs:.0f} s, load average before {load[0]:.2f}, after {os.getloadavg()[0]:.2f}",
              file=sys.stderr)
    print(table(out))


if __name__ == "__main__":
    main()
