/**
 * Which summaries are scalars, and their value. Writers store a scalar two ways:
 * - `simple_value`, a float32 (tensorboardX, torch.utils.tensorboard, TF1's tf.summary.scalar);
 * - a one-element tensor whose metadata names the "scalars" plugin or the scalar data class
 *   (TF2's tf.summary.scalar, tensorboard.summary.Writer), held in the typed value list of
 *   its dtype or as raw little-endian bytes in tensor_content (TF's C++ writer).
 * The value is what the file holds, widened to float64: a float32 stays the float32 it was.
 */
import { DT } from './tensorboard-proto.js';
import type { SummaryValue, TensorProto } from './tensorboard-proto.js';

const SCALARS_PLUGIN = 'scalars';
const DATA_CLASS_SCALAR = 1;

export type SummaryKind =
  | { kind: 'scalar'; value: number }
  /** A histogram, image, audio, text or other tensor summary: skipped and counted. */
  | { kind: 'other'; what: string }
  /** Claims to be a scalar but holds none: bad input. */
  | { kind: 'bad'; why: string };

function halfToNumber(bits: number): number {
  const sign = bits & 0x8000 ? -1 : 1;
  const exp = (bits >> 10) & 0x1f;
  const frac = bits & 0x3ff;
  if (exp === 0) return sign * frac * 2 ** -24;
  if (exp === 31) return frac ? NaN : sign * Infinity;
  return sign * (1 + frac / 1024) * 2 ** (exp - 15);
}

const F32 = Buffer.alloc(4);
function bfloat16ToNumber(bits: number): number {
  F32.writeUInt32LE(((bits & 0xffff) << 16) >>> 0, 0);
  return F32.readFloatLE(0);
}

/** Per dtype: its name, its bytes in tensor_content, how to read them, and its typed value list. */
interface DtypeReader {
  name: string;
  bytes: number;
  content: (b: Buffer) => number;
  list: (t: TensorProto) => number[];
  /** A list entry to a value (half and bfloat16 are stored as their bits). */
  fromList?: (x: number) => number;
}

const DTYPES = new Map<number, DtypeReader>([
  [DT.FLOAT, { name: 'float32', bytes: 4, content: (b) => b.readFloatLE(0), list: (t) => t.floatVal }],
  [DT.DOUBLE, { name: 'float64', bytes: 8, content: (b) => b.readDoubleLE(0), list: (t) => t.doubleVal }],
  [DT.HALF, { name: 'float16', bytes: 2, content: (b) => halfToNumber(b.readUInt16LE(0)), list: (t) => t.halfVal, fromList: halfToNumber }],
  [DT.BFLOAT16, { name: 'bfloat16', bytes: 2, content: (b) => bfloat16ToNumber(b.readUInt16LE(0)), list: (t) => t.halfVal, fromList: bfloat16ToNumber }],
  [DT.INT8, { name: 'int8', bytes: 1, content: (b) => b.readInt8(0), list: (t) => t.intVal }],
  [DT.UINT8, { name: 'uint8', bytes: 1, content: (b) => b.readUInt8(0), list: (t) => t.intVal }],
  [DT.INT16, { name: 'int16', bytes: 2, content: (b) => b.readInt16LE(0), list: (t) => t.intVal }],
  [DT.UINT16, { name: 'uint16', bytes: 2, content: (b) => b.readUInt16LE(0), list: (t) => t.intVal }],
  [DT.INT32, { name: 'int32', bytes: 4, content: (b) => b.readInt32LE(0), list: (t) => t.intVal }],
  [DT.UINT32, { name: 'uint32', bytes: 4, content: (b) => b.readUInt32LE(0), list: (t) => t.uint32Val }],
  [DT.INT64, { name: 'int64', bytes: 8, content: (b) => Number(b.readBigInt64LE(0)), list: (t) => t.int64Val }],
  [DT.UINT64, { name: 'uint64', bytes: 8, content: (b) => Number(b.readBigUInt64LE(0)), list: (t) => t.uint64Val }],
  [DT.BOOL, { name: 'bool', bytes: 1, content: (b) => (b[0] ? 1 : 0), list: (t) => t.boolVal }],
]);

function tensorScalar(t: TensorProto): SummaryKind {
  const elements = t.shape.reduce((n, d) => n * d, 1);
  if (elements !== 1) return { kind: 'bad', why: `a scalar summary whose tensor has shape [${t.shape.join(', ')}] (${elements} elements, expected 1)` };
  const dtype = DTYPES.get(t.dtype);
  if (dtype === undefined) return { kind: 'bad', why: `a scalar summary of dtype ${t.dtype}, which is not a number type` };
  if (t.content !== null && t.content.length > 0) {
    if (t.content.length !== dtype.bytes) {
      return { kind: 'bad', why: `a ${dtype.name} scalar with ${t.content.length} bytes of tensor_content (expected ${dtype.bytes})` };
    }
    return { kind: 'scalar', value: dtype.content(t.content) };
  }
  const list = dtype.list(t);
  if (list.length !== 1) return { kind: 'bad', why: `a ${dtype.name} scalar with ${list.length} values in its value list (expected 1)` };
  return { kind: 'scalar', value: dtype.fromList ? dtype.fromList(list[0]) : list[0] };
}

/** What a summary value is: a scalar and its value, or what else. */
export function summaryKind(v: SummaryValue): SummaryKind {
  if (v.simpleValue !== null) return { kind: 'scalar', value: v.simpleValue };
  if (v.other !== null) return { kind: 'other', what: v.other };
  if (v.tensor !== null && (v.pluginName === SCALARS_PLUGIN || v.dataClass === DATA_CLASS_SCALAR)) return tensorScalar(v.tensor);
  if (v.tensor !== null) return { kind: 'other', what: v.pluginName === '' ? 'tensor' : v.pluginName };
  return { kind: 'other', what: 'empty' };
}
