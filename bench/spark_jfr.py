"""Where Spark's JVM spends a `rocketq` read: a JDK Flight Recorder recording and its summary.

    .venv/bin/python bench/spark_ingest.py --messages 50000 --modes plain,batch --jfr /tmp/read.jfr
    .venv/bin/python bench/spark_jfr.py /tmp/read.jfr        # the summary of a recording made earlier

bench/spark_ingest.py --jfr records Spark's JVM (local[N]: the executors run in the driver's JVM) from
its start, and after the counted rounds writes the span of those rounds to the file (`jcmd <pid>
JFR.dump begin=... end=...`), so the summary covers what the printed figures measured. The settings
are the JDK's `profile` ones with Java method sampling every millisecond (its 10-20 ms leave a few dozen
samples of a read's task threads). The summary reads the recording with the JDK's `jfr print --json`:

* execution samples by kind of thread (digits dropped: every task thread is one kind);
* the executor task threads' samples by what the innermost recognised frame does (Arrow stream read,
  the Arrow column accessors, building the UnsafeRow, the noop sink, the Python runner...), and their
  top frames;
* the JIT compiler's work over the recording (jdk.CompilerStatistics: methods compiled and the
  compilers' time) and the garbage collections (count and pause time).
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

RECORDING = "rocketq-bench"
# What a task thread's sample is doing: the innermost frame whose class or method names one of these
# (walking from the leaf outwards; the first activity that matches a frame wins).
_ACTIVITY_NAMES = [
    ("build the UnsafeRow (MapInBatch's projection, then Project's copy)",
     ["UnsafeProjection", "UnsafeRowWriter", "UnsafeWriter", "UnsafeArrayWriter", "GeneratedIterator"]),
    ("Arrow column accessors (ArrowColumnVector, ColumnarBatchRow)",
     ["ArrowColumnVector", "ColumnarBatchRow", "ColumnarMap", "ColumnarArray", "ArrowBuf", "BitVectorHelper",
      "VarBinaryVector", "VarCharVector"]),
    ("read the Arrow stream from the Python worker",
     ["MessageSerializer", "ArrowStreamReader", "ReadChannel", "VectorLoader", "MessageChannelReader",
      "PythonArrowOutput", "ReaderIterator"]),
    ("write the Python worker's input (command, partition)", ["PythonArrowInput", "PythonRunner"]),
    ("noop sink and the write task", ["NoopWriter", "WritingSparkTask"]),
    ("task start and end (deserialise, metrics, memory)",
     ["Executor$TaskRunner", "TaskMemoryManager", "ObjectInputStream", "TaskMetrics", "TaskState"]),
]  # fmt: skip
ACTIVITIES = [(what, re.compile("|".join(map(re.escape, names)))) for what, names in _ACTIVITY_NAMES]


def jfc_file() -> Path:
    """The JDK's `profile` settings with Java method sampling every millisecond, as a temporary file."""
    java = shutil.which("java")
    if java is None or shutil.which("jcmd") is None or shutil.which("jfr") is None:
        raise SystemExit("--jfr needs the JDK's java, jcmd and jfr on PATH")
    profile = Path(java).resolve().parent.parent / "lib" / "jfr" / "profile.jfc"
    text = re.sub(
        r'(<setting name="period" control="method-sampling-java-interval">)[^<]*<',
        r"\g<1>1 ms<",
        profile.read_text(),
    )
    out = Path(tempfile.mkstemp(prefix="rocketq-bench-", suffix=".jfc")[1])
    out.write_text(text)
    return out


def jvm_option(settings: Path) -> str:
    """The JVM option that records from the JVM's start (JFR's own start-up and JIT then fall before the
    rounds measured, which dump() cuts out of the recording)."""
    return f"-XX:StartFlightRecording=name={RECORDING},settings={settings}"


def dump(pid: int, path: str, begin: float, end: float) -> None:
    """Write what the JVM `pid` recorded from `begin` to `end` (seconds since the epoch) to `path`."""
    span = [f"begin={_instant(begin)}", f"end={_instant(end)}"]
    subprocess.run(
        ["jcmd", str(pid), "JFR.dump", f"name={RECORDING}", *span, f"filename={Path(path).resolve()}"],
        check=True,
        capture_output=True,
        timeout=60,
    )


def _instant(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def events(path: str, kinds: str) -> list[dict[str, Any]]:
    out = subprocess.run(
        ["jfr", "print", "--json", "--events", kinds, path], check=True, capture_output=True, timeout=300
    ).stdout
    return list(json.loads(out)["recording"]["events"])


def _seconds(iso: str) -> float:
    """A JFR duration (ISO 8601, "PT0.0123S") in seconds."""
    m = re.fullmatch(r"PT(?:(\d+)M)?([\d.]+)S", iso)
    return (int(m.group(1) or 0) * 60 + float(m.group(2))) if m else 0.0


def _frame(f: dict[str, Any]) -> str:
    return f"{f['method']['type']['name'].rsplit('/', 1)[-1]}.{f['method']['name']}"


def summary(path: str, begin: float = 0.0, end: float = float("inf"), top: int = 12) -> list[str]:
    """The recording's summary, of the events from `begin` to `end` (seconds since the epoch; a dump
    holds whole chunks of the recording, which may reach outside the span asked for)."""

    def events_in(kinds: str) -> list[dict[str, Any]]:
        return [e for e in events(path, kinds) if begin <= _when(e) <= end]

    samples = events_in("jdk.ExecutionSample")
    kinds: Counter[str] = Counter()
    tasks: list[list[str]] = []
    for e in samples:
        thread = e["values"]["sampledThread"]
        name = thread.get("javaName") or thread.get("osName") or "?"
        kind = re.sub(r"\d+", "", name).strip(" -#.")
        kinds[kind] += 1
        if kind.startswith("Executor task"):  # (Spark 4 names a task thread "launch" or "idle" worker)
            trace = e["values"]["stackTrace"]
            tasks.append([_frame(f) for f in (trace["frames"] if trace else [])])
    lines = [f"JFR {path}: {len(samples)} execution samples by thread: " + ", ".join(
        f"{k} {n}" for k, n in kinds.most_common(6))]  # fmt: skip
    if tasks:
        lines.append(f"  executor task threads ({len(tasks)} samples), by activity:")
        doing = Counter(_activity(frames) for frames in tasks)
        lines += [f"    {100 * n / len(tasks):5.1f} % {what}" for what, n in doing.most_common()]
        leaves = Counter(frames[0] for frames in tasks if frames)
        lines.append("  their top frames: " + ", ".join(
            f"{f} {100 * n / len(tasks):.0f} %" for f, n in leaves.most_common(top)))  # fmt: skip
    stats = events_in("jdk.CompilerStatistics")
    if len(stats) >= 2:
        first, last = stats[0]["values"], stats[-1]["values"]
        span = _when(stats[-1]) - _when(stats[0])
        lines.append(
            f"  JIT over {span:.1f} s of the recording: {last['compileCount'] - first['compileCount']} methods "
            f"compiled, {_seconds(last['totalTimeSpent']) - _seconds(first['totalTimeSpent']):.2f} s of compiler time"
        )
    gcs = events_in("jdk.GarbageCollection")
    pauses = sum(_seconds(g["values"]["sumOfPauses"]) for g in gcs)
    causes = Counter(f"{g['values']['name']} ({g['values']['cause']})" for g in gcs)
    lines.append(f"  GC: {len(gcs)} collections, {pauses * 1000:.0f} ms of pauses: " + ", ".join(
        f"{k} {n}" for k, n in causes.most_common()))  # fmt: skip
    return lines


def _activity(frames: list[str]) -> str:
    for frame in frames:
        for what, pattern in ACTIVITIES:
            if pattern.search(frame):
                return what
    return "other (Spark's task and scheduling code)"


def _when(event: dict[str, Any]) -> float:
    return datetime.fromisoformat(event["values"]["startTime"].replace("Z", "+00:00")).timestamp()


if __name__ == "__main__":
    for line in summary(sys.argv[1]):
        print(line)
