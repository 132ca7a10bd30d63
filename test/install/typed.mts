// Type-checked against the installed declarations (never run). The @ts-expect-error lines
// fail the check if the types resolve to `any` or do not resolve at all.
import { Recorder, RunReader, type RecorderOptions, type StepRecord } from 'rlprobe';

const options: RecorderOptions = { algorithm: 'grpo', flushSteps: 100 };
const rec = new Recorder('runs/typed', options);
const record: StepRecord = { step: 0, loss: 1, reward_mean: 0.5 };
rec.logStep(record);
// @ts-expect-error flushSteps is a number
const bad: RecorderOptions = { flushSteps: 'often' };
void bad;
rec.close();

const loss: Float64Array = RunReader.open('runs/typed').view().series('loss');
// @ts-expect-error a series is numbers, not strings
const wrong: string[] = RunReader.open('runs/typed').view().series('loss');
void wrong;
console.log(loss.length);
