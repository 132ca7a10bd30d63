"""TensorBoard event files written by the real Python packages (test/import-tensorboard.test.ts).

usage:
  py_tensorboard.py write MODE DIR [STEPS]  writes a log directory, prints the scalars written as JSON
  py_tensorboard.py read FILE               prints what TensorBoard's own loader reads from one file

Modes:
  trl      tensorboardX.SummaryWriter as transformers' TensorBoardCallback uses it (TRL):
           train/<key>, eval/<key>, args text, histograms and text to be skipped
  verl     tensorboard.summary.Writer (TensorBoard's own writer: scalar tensors, plugin
           "scalars") with verl's names, and a second file (tensorboard's EventFileWriter) with
           the other tensor encodings: double_val, tensor_content, int64_val, data_class only
  resume   two tensorboardX writers in one directory, the second rewriting steps 8-10
  split    one run in two folders: train/ (train/… tags) and eval/ (eval/… tags)
  runs     two runs in two folders with the same tags
  generic  tags neither TRL's nor verl's
  mixed    one TRL-style tag and two verl tags
  records  a TFRecord file of records that are no Event (tensorboardX's RecordWriter)
  negative a tensorboardX log whose third step is -1
  large    a 3 MiB text record between scalars
  bench    STEPS steps of 30 tags (tensorboardX), for timing
  collapse a TRL GRPO run (tensorboardX) of STEPS steps whose entropy collapses from step
           STEPS/2 (to 5 % of its start) while reward and lengths stay healthy: the doctor's
           input on an imported run
The scalars written are [tag, step, value as stored (float32 widened, or float64), wall_time].
"""
import json
import math
import os
import sys

import numpy as np

from json_safe import clean


def f32(x):
    return float(np.float32(x))


TRL_TAGS = [
    "train/loss", "train/grad_norm", "train/learning_rate", "train/num_tokens",
    "train/completions/mean_length", "train/completions/min_length", "train/completions/max_length",
    "train/completions/clipped_ratio", "train/completions/mean_terminated_length",
    "train/rewards/accuracy_reward/mean", "train/rewards/accuracy_reward/std",
    "train/rewards/format_reward/mean", "train/reward", "train/reward_std",
    "train/frac_reward_zero_std", "train/kl", "train/entropy", "train/clip_ratio/region_mean",
]


def write_trl(logdir, steps):
    from tensorboardX import SummaryWriter

    rng = np.random.default_rng(19)
    w = SummaryWriter(logdir)
    written = []

    def scalar(tag, value, step, wall):
        w.add_scalar(tag, value, step, walltime=wall)
        written.append([tag, step, f32(value), wall])

    # transformers' on_train_begin: the TrainingArguments as text, at step 0
    w.add_text("args", json.dumps({"learning_rate": 1e-06, "beta": 0.04}))
    base = 1_700_000_000.0
    for step in range(1, steps + 1):
        wall = base + 2.5 * step + 0.125
        for i, tag in enumerate(TRL_TAGS):
            value = float(rng.normal(0.5, 0.2))
            if tag == "train/learning_rate":
                value = 1e-6 * (1 - step / (steps + 1))
            if tag == "train/grad_norm" and step == 3:
                value = float("nan")  # the Trainer logs a NaN norm as it is
            scalar(tag, value, step, wall + i * 0.001)
        scalar("train/epoch", step / steps, step, wall + 0.1)
        if step % 5 == 0:
            # the evaluation's log: eval_* as eval/*, and the epoch again (same value)
            ewall = wall + 1.0
            for tag in ("eval/reward", "eval/loss", "eval/runtime"):
                scalar(tag, float(rng.normal(0.4, 0.1)), step, ewall)
            scalar("train/epoch", step / steps, step, ewall)
        if step % 4 == 0:
            w.add_histogram("train/logprobs", rng.normal(size=64), step)
            w.add_text("train/completion", f"completion at step {step}", step)
    # Trainer.train()'s closing log
    final = {"train_runtime": 123.25, "train_samples_per_second": 4.5, "train_steps_per_second": 0.5, "total_flos": 0.0, "train_loss": 0.0125}
    for key, value in final.items():
        scalar("train/" + key, value, steps, base + 2.5 * steps + 5)
    w.close()
    return written


VERL_TAGS = [
    "actor/entropy", "actor/kl_loss", "actor/pg_clipfrac", "actor/grad_norm", "actor/pg_loss",
    "critic/score/mean", "critic/rewards/mean", "critic/vf_loss", "response_length/mean",
    "response_length/clip_ratio", "perf/throughput",
]


def write_verl(logdir, steps):
    from tensorboard.compat.proto import event_pb2, summary_pb2, tensor_pb2, tensor_shape_pb2, types_pb2
    from tensorboard.summary import Writer
    from tensorboard.summary.writer.event_file_writer import EventFileWriter
    from tensorboard.util import tensor_util

    rng = np.random.default_rng(7)
    written = []
    w = Writer(logdir)
    base = 1_710_000_000.0
    for step in range(steps):
        wall = base + 30.0 * step + 0.5
        for i, tag in enumerate(VERL_TAGS):
            value = float(rng.normal(1.0, 0.3))
            if tag == "critic/vf_loss" and step == 2:
                value = float("inf")
            w.add_scalar(tag, value, step, wall_time=wall + i * 0.01)
            written.append([tag, step, f32(value), wall + i * 0.01])
        if step % 5 == 0:
            value = float(rng.uniform())
            w.add_scalar("val-core/openai/gsm8k/acc/mean@1", value, step, wall_time=wall + 20)
            written.append(["val-core/openai/gsm8k/acc/mean@1", step, f32(value), wall + 20])
    w.close()

    # the other ways a scalar tensor is stored, through tensorboard's own protos and writer
    ew = EventFileWriter(logdir, filename_suffix=".encodings")
    scalars_meta = summary_pb2.SummaryMetadata(plugin_data=summary_pb2.SummaryMetadata.PluginData(plugin_name="scalars"))
    class_meta = summary_pb2.SummaryMetadata(data_class=summary_pb2.DataClass.DATA_CLASS_SCALAR)
    for step in range(steps):
        wall = base + 30.0 * step + 0.75
        lr = 1e-6 * (step + 1)
        tensors = [
            # float64 in double_val: timing_s/step kept to the last bit
            ("timing_s/step", tensor_util.make_tensor_proto(np.float64(60.0 + step / 3)), scalars_meta, 60.0 + step / 3),
            # float32 as raw bytes in tensor_content, as TF's C++ summary writer stores it
            ("actor/lr", tensor_pb2.TensorProto(dtype=types_pb2.DT_FLOAT, tensor_shape=tensor_shape_pb2.TensorShapeProto(), tensor_content=np.float32(lr).tobytes()), scalars_meta, f32(lr)),
            # an integer scalar
            ("training/global_step", tensor_util.make_tensor_proto(np.int64(step)), scalars_meta, float(step)),
            # the scalar data class without a plugin name
            ("perf/mfu/actor", tensor_util.make_tensor_proto(np.float64(0.25 + step / 1000)), class_meta, 0.25 + step / 1000),
            # float16, stored as its bits in half_val
            ("perf/max_memory_allocated_gb", tensor_util.make_tensor_proto(np.float16(40 + step / 7)), scalars_meta, float(np.float16(40 + step / 7))),
        ]
        event = event_pb2.Event(wall_time=wall, step=step)
        for tag, tensor, meta, value in tensors:
            event.summary.value.add(tag=tag, tensor=tensor, metadata=meta)
            written.append([tag, step, value, wall])
        ew.add_event(event)
    ew.close()
    return written


def write_resume(logdir, _steps):
    from tensorboardX import SummaryWriter

    written = []
    first = SummaryWriter(logdir, filename_suffix=".first")
    for step in range(1, 11):
        for tag, value in (("train/reward", step / 10), ("train/kl", step / 100)):
            first.add_scalar(tag, value, step, walltime=1_700_000_000.0 + step)
            written.append([tag, step, f32(value), 1_700_000_000.0 + step])
    first.close()
    # a resumed run: a new writer restarts from the checkpoint at step 7
    second = SummaryWriter(logdir, filename_suffix=".second")
    for step in range(8, 16):
        for tag, value in (("train/reward", step / 10 + 0.5), ("train/kl", step / 100 + 0.5)):
            second.add_scalar(tag, value, step, walltime=1_700_001_000.0 + step)
            written.append([tag, step, f32(value), 1_700_001_000.0 + step])
    second.close()
    return written


def write_folders(logdir, tags_of):
    from tensorboardX import SummaryWriter

    written = []
    for folder, tags in tags_of.items():
        w = SummaryWriter(os.path.join(logdir, folder))
        for step in range(1, 6):
            for tag in tags:
                value = step * 0.25 + len(tag)
                w.add_scalar(tag, value, step, walltime=1_700_000_000.0 + step)
                written.append([tag, step, f32(value), 1_700_000_000.0 + step])
        w.close()
    return written


def write_records(logdir, _steps):
    from tensorboardX.record_writer import RecordWriter

    os.makedirs(logdir, exist_ok=True)
    r = RecordWriter(os.path.join(logdir, "events.out.tfevents.0.records"))
    r.write(b"not an event")
    r.write(b"\xff\xff\xff")
    r.close()
    return []


def write_negative(logdir, _steps):
    from tensorboardX import SummaryWriter

    w = SummaryWriter(logdir)
    for step in (1, 2, -1):
        w.add_scalar("train/reward", 0.5, step, walltime=1_700_000_000.0 + step)
    w.close()
    return []


def write_large(logdir, _steps):
    from tensorboardX import SummaryWriter

    w = SummaryWriter(logdir)
    written = []
    for step in (1, 2, 3):
        w.add_scalar("train/reward", step / 4, step, walltime=1_700_000_000.0 + step)
        written.append(["train/reward", step, f32(step / 4), 1_700_000_000.0 + step])
        if step == 2:
            w.add_text("train/completions", "x" * (3 << 20), step)  # one 3 MiB record
    w.close()
    return written


def write_bench(logdir, steps):
    from tensorboardX import SummaryWriter

    w = SummaryWriter(logdir, max_queue=1000)
    tags = TRL_TAGS + [f"train/extra_{i}" for i in range(30 - len(TRL_TAGS))]
    for step in range(1, steps + 1):
        for i, tag in enumerate(tags):
            w.add_scalar(tag, step * 0.001 + i, step, walltime=1_700_000_000.0 + step)
    w.close()
    return [["steps", steps, len(tags), 0]]


def write_collapse(logdir, steps):
    from tensorboardX import SummaryWriter

    rng = np.random.default_rng(1919)
    w = SummaryWriter(logdir)
    onset = steps // 2
    base = 1_700_000_000.0
    for step in range(1, steps + 1):
        d = max(0, step - onset)
        entropy = 0.62 * (0.05 + 0.95 * math.exp(-d / 25.0)) * math.exp(0.04 * rng.normal())
        values = {
            "train/entropy": entropy,
            "train/reward": 0.3 + 0.4 * (1 - math.exp(-step / 150.0)) + 0.03 * rng.normal(),
            "train/reward_std": 0.3 + 0.02 * rng.normal(),
            "train/kl": 0.002 * math.sqrt(step) * math.exp(0.1 * rng.normal()),
            "train/completions/mean_length": 300 + 0.1 * step + 10 * rng.normal(),
            "train/completions/clipped_ratio": abs(0.02 + 0.005 * rng.normal()),
            "train/grad_norm": 0.4 * math.exp(0.2 * rng.normal()),
            "train/learning_rate": 1e-6,
            "train/loss": 0.01 * rng.normal(),
        }
        for i, (tag, value) in enumerate(values.items()):
            w.add_scalar(tag, value, step, walltime=base + 10 * step + 0.001 * i)
    w.close()
    return [["steps", steps, onset, 0]]


WRITERS = {
    "collapse": write_collapse,
    "trl": write_trl,
    "verl": write_verl,
    "resume": write_resume,
    "split": lambda d, _s: write_folders(d, {"train": ["train/reward", "train/kl"], "eval": ["eval/reward"]}),
    "runs": lambda d, _s: write_folders(d, {"run_a": ["train/reward", "train/kl"], "run_b": ["train/reward"]}),
    "generic": lambda d, _s: write_folders(d, {".": ["loss", "accuracy/top1"]}),
    "mixed": lambda d, _s: write_folders(d, {".": ["train/reward", "actor/entropy", "critic/score/mean"]}),
    "records": write_records,
    "negative": write_negative,
    "large": write_large,
    "bench": write_bench,
}


def read(path):
    """What TensorBoard itself reads: its event file loader (no TensorFlow: the compat stub)."""
    from tensorboard.backend.event_processing.event_file_loader import LegacyEventFileLoader
    from tensorboard.util import tensor_util

    out = {"records": 0, "scalars": [], "non_scalar": {}, "error": None}
    try:
        for event in LegacyEventFileLoader(path).Load():
            out["records"] += 1
            for v in event.summary.value:
                kind = v.WhichOneof("value")
                plugin = v.metadata.plugin_data.plugin_name
                if kind == "simple_value":
                    out["scalars"].append([v.tag, event.step, float(v.simple_value), event.wall_time])
                elif kind == "tensor" and (plugin == "scalars" or v.metadata.data_class == 1):
                    out["scalars"].append([v.tag, event.step, float(tensor_util.make_ndarray(v.tensor).item()), event.wall_time])
                else:
                    out["non_scalar"][v.tag] = out["non_scalar"].get(v.tag, 0) + 1
    except Exception as error:  # noqa: BLE001 - the test compares what was read before it
        out["error"] = f"{type(error).__name__}: {error}"
    return out


def main():
    if sys.argv[1] == "write":
        mode, logdir = sys.argv[2], sys.argv[3]
        steps = int(sys.argv[4]) if len(sys.argv) > 4 else 20
        print(json.dumps(clean(WRITERS[mode](logdir, steps))))
    elif sys.argv[1] == "read":
        print(json.dumps(clean(read(sys.argv[2]))))
    else:
        raise SystemExit(__doc__)


if __name__ == "__main__":
    main()
