"""Records runs with Python rlprobe in the layouts a run is found in besides a clean close
(test/python-interop.test.ts reads them back with our RunReader).

usage: py_write_layouts.py ROOT
Writes, under ROOT:
  crashed    rank 0 flushed after every chunk, never closed: step parts, sample shards
  resumed    closed at step 150 (steps.parquet), then a second Recorder on the same directory
             logs steps 140-239 (generation 1), flushed, never closed: steps.parquet + parts.
             The second logs no samples: Python rlprobe 0.1.0 numbers shards from 0 again and
             would overwrite the first one's shard files.
  multirank  ranks 0 and 1 (record_all_ranks, world size 2), flushed, never closed
  live       like crashed, but the Recorder stays open
then prints the expected records of each as one JSON line and waits for a line on stdin;
it then exits without closing anything (os._exit: no atexit compaction), as a killed
process would. Columns appear mid-run as in test/helpers/late-columns.ts: extra.eval_accuracy
every 50 steps from 50, reward_component.length_penalty from 120, extra.throughput.tok/s
from 180; samples every 10 steps with reward_component.style from 100.
Non-finite floats are written as the strings "NaN", "Infinity", "-Infinity".
"""
import json
import os
import sys

from rlprobe import Recorder

from json_safe import clean

CHUNK = 30


def step_metrics(step, generation):
    m = dict(
        timestamp=1_760_000_000.0 + step + generation / 4,
        loss=float("nan") if step == 77 else 1.0 / (step + 1) + generation,
        reward_mean=(step % 13) / 13,
        grad_norm=float("inf") if step == 133 else 0.5 + (step % 7) / 10,
        nan_count=3 if step == 77 else 0,
        reward_components={"format": (step % 3) / 2},
    )
    if step % 5 == 0:
        m["kl_positional"] = [step / 100, 0.5, 1e-300]
    if step >= 50 and step % 50 == 0:
        m["eval_accuracy"] = step / 1000 + generation
    if step >= 120:
        m["reward_components"]["length_penalty"] = -(step % 11) / 10
    if step >= 180:
        m["throughput.tok/s"] = 1000.0 + step + generation
    return m


def expected_step(step, rank, m):
    """The StepRecord Python builds: unknown keys in extra."""
    known = {"timestamp", "loss", "reward_mean", "grad_norm", "nan_count", "reward_components", "kl_positional"}
    out = {"step": step, "rank": rank, **{k: v for k, v in m.items() if k in known}}
    extra = {k: v for k, v in m.items() if k not in known}
    if extra:
        out["extra"] = extra
    return out


def samples_at(step, rank, generation):
    out = []
    for i in range(3):
        s = dict(
            sample_id=f"py-g{generation}-r{rank}-s{step}-{i}",
            group_id=f"grp-{step}",
            prompt_id=f"p-{step}",
            prompt_text=f"What is {step} + {i}? ✓",
            completion_text=f"{step + i}\nbecause…",
            completion_token_ids=[step, i, 50256],
            reward_total=float("nan") if (i == 1 and step == 40) else i / 2 + rank,
            reward_components={"format": float(i % 2)},
            advantage=float(i - 1),
            completion_len=10 + i,
            truncated=i == 2,
        )
        if step >= 100:
            s["reward_components"]["style"] = step / 1000
        out.append(s)
    return out


def record(rec, rank, start, stop, generation, expected, with_samples=True):
    for step in range(start, stop):
        m = step_metrics(step, generation)
        rec.log_step(step, **m)
        if rank == 0:
            expected["steps"].append(expected_step(step, rank, m))
        if with_samples and step % 10 == 0:
            samples = samples_at(step, rank, generation)
            rec.log_samples(step, samples, select=False)
            expected["samples"].extend({**s, "step": step, "rank": rank} for s in samples)
        if step % 100 == 0:
            rec.log_event("checkpoint", step=step, message=f"g{generation} r{rank} ckpt {step}", path=f"/ckpt/{step}")
            expected["events"].append({"kind": "checkpoint", "step": step, "rank": rank, "message": f"g{generation} r{rank} ckpt {step}", "data": {"path": f"/ckpt/{step}"}})
        if (step + 1) % CHUNK == 0:
            assert rec.flush(timeout=30), "flush timed out"
    assert rec.flush(timeout=30), "flush timed out"


def recorder(run_dir, rank=0, world_size=1):
    # the cadence is ours (flush per chunk), never the writer's
    return Recorder(
        run_dir, algorithm="grpo", run_id="py-layouts", world_size=world_size, rank=rank, record_all_ranks=world_size > 1,
        install_handlers=False, capture_env=False, steps_per_flush=1_000_000, flush_interval_s=3600.0,
    )


def main(root):
    out = {}
    open_recorders = []  # never closed: referenced until os._exit

    crashed = {"steps": [], "samples": [], "events": []}
    rec = recorder(os.path.join(root, "crashed"))
    record(rec, 0, 0, 240, 0, crashed)
    open_recorders.append(rec)
    out["crashed"] = crashed

    resumed = {"steps": [], "samples": [], "events": []}
    first = recorder(os.path.join(root, "resumed"))
    record(first, 0, 0, 150, 0, resumed)
    first.close()
    second = recorder(os.path.join(root, "resumed"))
    record(second, 0, 140, 240, 1, resumed, with_samples=False)
    open_recorders.append(second)
    out["resumed"] = resumed

    multirank = {"steps": [], "samples": [], "events": []}
    for rank in (0, 1):
        rec = recorder(os.path.join(root, "multirank"), rank=rank, world_size=2)
        record(rec, rank, 0, 240, 0, multirank)
        open_recorders.append(rec)
    out["multirank"] = multirank

    live = {"steps": [], "samples": [], "events": []}
    rec = recorder(os.path.join(root, "live"))
    record(rec, 0, 0, 240, 0, live)
    open_recorders.append(rec)
    out["live"] = live

    print(json.dumps(clean(out)), flush=True)
    sys.stdin.readline()
    os._exit(0)


if __name__ == "__main__":
    main(sys.argv[1])
