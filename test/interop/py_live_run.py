"""Records a run with Python rlprobe and keeps it open (the run-end tests watch it).

usage: py_live_run.py RUN_DIR STEPS
Logs STEPS steps, flushes them (step parts on disk, as a live Python run leaves them),
prints "flushed" and waits for a line on stdin: "close" closes the recorder cleanly (the
steps are compacted into steps.parquet; Python writes no ending event), anything else or
end of input exits without closing.
"""
import sys

from rlprobe import Recorder


def main(run_dir: str, steps: int) -> None:
    rec = Recorder(run_dir, algorithm="grpo", run_id="py-live", install_handlers=False, capture_env=False)
    for step in range(steps):
        rec.log_step(step=step, loss=1.0 / (step + 1), reward_mean=0.1 + 0.001 * step)
    rec.flush()
    print("flushed", flush=True)
    line = sys.stdin.readline().strip()
    if line == "close":
        rec.close()
        print("closed", flush=True)


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))
