/**
 * Running user code inside a span or a unit (`recorder.span(…)`, `recorder.unit(…)`): the
 * scope becomes ambient for everything logged inside, across `await`, and a span ends when
 * the code settles. Refused arguments never stop the code: they become `bad_record` events.
 */
import { mergeCoords } from './coords.js';
import type { RefusedCoord, UnitCoords } from './coords.js';
import type { Span, SpanOptions } from './span.js';
import type { ReportRefused, SpanRecorder } from './span-recorder.js';

/** Runs `fn(span)` and ends the span when it settles: a throw or a rejection ends it as `error`. */
function runAndEnd<T>(span: Span, fn: (span: Span) => T): T {
  let result: T;
  try {
    result = fn(span);
  } catch (error) {
    span.end({ error });
    throw error;
  }
  if (result !== null && typeof result === 'object' && typeof (result as { then?: unknown }).then === 'function') {
    return (result as unknown as PromiseLike<unknown>).then(
      (value) => {
        span.end();
        return value;
      },
      (error: unknown) => {
        span.end({ error });
        throw error;
      },
    ) as T;
  }
  span.end();
  return result;
}

/** Starts a span, runs `fn` with it ambient (unless refused: then not entered), ends it. */
export function runInSpan<T>(spans: SpanRecorder, kind: string, name: string, fn: (span: Span) => T, options: SpanOptions | undefined): T {
  const span = spans.start(kind, name, options);
  if (span._id === '') return runAndEnd(span, fn);
  return spans.ambient.run({ span, coords: span._coords }, () => runAndEnd(span, fn));
}

/** Runs `fn` in the ambient span with `coords` merged over the ambient unit's; refused fields are reported and left out. */
export function runInUnit<T>(spans: SpanRecorder, coords: UnitCoords, fn: () => T, report: ReportRefused): T {
  const ambient = spans.ambient.current();
  const refused: RefusedCoord[] = [];
  const merged = mergeCoords(ambient?.coords ?? null, coords, refused);
  for (const r of refused) report('unit', r, merged.step);
  return spans.ambient.run({ span: ambient?.span ?? null, coords: merged }, fn);
}
