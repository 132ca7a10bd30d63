"""Reads runs with the Python rlprobe package (its RunReader), as a Python user would;
prints JSON (test/python-interop.test.ts compares it with what our Recorder logged).

usage: py_read_layouts.py NAME=RUN_DIR [NAME=RUN_DIR ...]
For each run: the manifest, steps, samples and events through Python's models, the rank
directories it finds, the files it reads the steps from, and its steps_table()'s columns
and row count.
Non-finite floats are written as the strings "NaN", "Infinity", "-Infinity".
"""
import json
import os
import sys

from rlprobe.storage import RunReader

from json_safe import clean


def read(run_dir):
    r = RunReader(run_dir)
    table = r.steps_table()
    return {
        "manifest": r.manifest.model_dump(),
        "steps": [s.model_dump(exclude_none=True) for s in r.steps()],
        "samples": [s.model_dump(exclude_none=True) for s in r.samples()],
        "events": [e.model_dump() for e in r.events()],
        "rank_dirs": [os.path.basename(p) for p in r.rank_dirs()],
        "step_files": [os.path.relpath(p, run_dir) for p in r._step_files()],
        "steps_table": {"columns": table.column_names, "rows": table.num_rows},
    }


def main(args):
    out = {}
    for arg in args:
        name, run_dir = arg.split("=", 1)
        out[name] = read(run_dir)
    print(json.dumps(clean(out)))


if __name__ == "__main__":
    main(sys.argv[1:])
