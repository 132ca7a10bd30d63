"""Records a run with the Python rlprobe package (the interop tests read it back).

usage: py_write_run.py RUN_DIR   — prints the expected records as JSON on stdout
"""
import json
import sys

from rlprobe import Recorder, SamplingConfig

from json_safe import clean


def main(run_dir: str) -> None:
    expected = {"steps": [], "samples": [], "events": []}
    for rank in (0, 1):
        rec = Recorder(
            run_dir,
            algorithm="grpo",
            run_id="py-interop",
            model_name="tiny-llm",
            trainer_config={"lr": 1e-6, "nested": {"beta": 0.04, "list": [1, 2]}},
            world_size=2,
            rank=rank,
            record_all_ranks=True,
            sampling=SamplingConfig(top_k=1, bottom_k=1, random_k=1),
            install_handlers=False,
            capture_env=False,
        )
        for step in range(30):
            metrics = dict(
                reward_mean=0.1 * step + rank,
                reward_std=0.5,
                kl_mean=0.01 * step,
                kl_positional=[0.1, 0.2, 0.3 + step],
                entropy_mean=2.0 - 0.01 * step,
                loss=float("nan") if step == 7 else 1.0 / (step + 1),
                grad_norm=float("inf") if step == 9 else 0.5,
                nan_count=1 if step == 7 else 0,
                reward_components={"format": 1.0, "correct": 0.1 * step},
                my_custom=step * 3.0,
            )
            if step % 10 == 0:
                metrics["lr"] = 1e-6
            if rank == 0:
                rec.log_step(step, timestamp=1_700_000_000.0 + step, **metrics)
                expected["steps"].append({"step": step, **metrics})
            samples = [
                dict(
                    sample_id=f"r{rank}-s{step}-{i}",
                    group_id=f"g{i % 2}",
                    prompt_id=f"p{step}",
                    prompt_text=f"What is {step} + {i}? 🤔",
                    completion_text=f"{step + i}\nbecause… ünïcode",
                    completion_token_ids=[step, i, 50256],
                    reward_total=float(i),
                    reward_components={"format": 1.0, "correct": float(i % 2)},
                    advantage=i - 1.5,
                    logprob_mean=-0.25 * i,
                    kl_contribution=0.001 * i,
                    completion_len=10 + i,
                    truncated=i == 3,
                )
                for i in range(4)
            ]
            rec.log_samples(step, samples, select=False)
            for s in samples:
                expected["samples"].append({**s, "step": step, "rank": rank, "capture_reason": None})
        rec.log_event("checkpoint", step=10, message=f"ckpt rank {rank}", path="/ckpt/10", size=123)
        expected["events"].append({"kind": "checkpoint", "step": 10, "rank": rank, "message": f"ckpt rank {rank}", "data": {"path": "/ckpt/10", "size": 123}})
        rec.close()
    print(json.dumps(clean(expected)))


if __name__ == "__main__":
    main(sys.argv[1])
