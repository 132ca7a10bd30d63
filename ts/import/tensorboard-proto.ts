/**
 * The part of TensorBoard's protobuf messages (tensorboard/compat/proto: event.proto,
 * summary.proto, tensor.proto, tensor_shape.proto) that scalars need, decoded by hand: no
 * protobuf runtime for a dozen fields. Unknown fields are skipped, as protobuf does; a
 * known field with the wrong wire type, or bytes that end inside a field, is an error.
 *
 *   Event       wall_time=1 double, step=2 int64, file_version=3 string, summary=5 Summary
 *   Summary     value=1 repeated Value
 *   Value       tag=1, simple_value=2 float, histo=5, image=4, audio=6, tensor=8 TensorProto,
 *               metadata=9 SummaryMetadata{plugin_data=1 {plugin_name=1}, data_class=4}
 *   TensorProto dtype=1, tensor_shape=2 {dim=2 {size=1}}, tensor_content=4, float_val=5,
 *               double_val=6, int_val=7, int64_val=10, bool_val=11, half_val=13,
 *               uint32_val=16, uint64_val=17
 */

const WIRE_VARINT = 0;
const WIRE_FIXED64 = 1;
const WIRE_BYTES = 2;
const WIRE_FIXED32 = 5;

/** A message that does not decode (the caller adds the file and offset). */
export class ProtoError extends Error {}

class ProtoReader {
  pos: number;

  constructor(
    private readonly buf: Buffer,
    start = 0,
    readonly end = buf.length,
  ) {
    this.pos = start;
  }

  get done(): boolean {
    return this.pos >= this.end;
  }

  private need(n: number, what: string): void {
    if (this.pos + n > this.end) throw new ProtoError(`${what} runs past the end of its message`);
  }

  /** An unsigned varint: a number up to 2^53, a bigint beyond. */
  varint(): number | bigint {
    const start = this.pos;
    let value = 0;
    let scale = 1;
    // 7 bytes hold 49 bits: exact as a number; a longer varint is read again as a bigint
    for (let i = 0; i < 7; i++) {
      this.need(1, 'a varint');
      const b = this.buf[this.pos++];
      value += (b & 0x7f) * scale;
      if ((b & 0x80) === 0) return value;
      scale *= 128;
    }
    this.pos = start;
    let big = 0n;
    for (let shift = 0n; shift < 70n; shift += 7n) {
      this.need(1, 'a varint');
      const b = this.buf[this.pos++];
      big |= BigInt(b & 0x7f) << shift;
      if ((b & 0x80) === 0) {
        big = BigInt.asUintN(64, big);
        return big <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(big) : big;
      }
    }
    throw new ProtoError('a varint longer than 10 bytes');
  }

  /** An int64 (two's complement in 64 bits) as a number; bigint when not a safe integer. */
  int64(): number | bigint {
    const v = this.varint();
    if (typeof v === 'number') return v;
    const signed = BigInt.asIntN(64, v);
    return signed >= BigInt(Number.MIN_SAFE_INTEGER) && signed <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(signed) : signed;
  }

  fixed32(): Buffer {
    this.need(4, 'a fixed32 field');
    this.pos += 4;
    return this.buf.subarray(this.pos - 4, this.pos);
  }

  fixed64(): Buffer {
    this.need(8, 'a fixed64 field');
    this.pos += 8;
    return this.buf.subarray(this.pos - 8, this.pos);
  }

  /** A length-delimited field: a reader over its bytes. */
  sub(): ProtoReader {
    const n = this.varint();
    if (typeof n !== 'number') throw new ProtoError('a field length beyond 2^53');
    this.need(n, `a ${n}-byte field`);
    this.pos += n;
    return new ProtoReader(this.buf, this.pos - n, this.pos);
  }

  bytes(): Buffer {
    const r = this.sub();
    return this.buf.subarray(r.pos, r.end);
  }

  string(): string {
    return this.bytes().toString('utf8');
  }

  /** The next field's number and wire type. */
  key(): { field: number; wire: number } {
    const k = this.varint();
    if (typeof k !== 'number') throw new ProtoError('a field key beyond 2^53');
    return { field: Math.floor(k / 8), wire: k % 8 };
  }

  skip(wire: number, field: number): void {
    if (wire === WIRE_VARINT) this.varint();
    else if (wire === WIRE_FIXED64) this.fixed64();
    else if (wire === WIRE_BYTES) this.sub();
    else if (wire === WIRE_FIXED32) this.fixed32();
    else throw new ProtoError(`field ${field} has wire type ${wire} (groups are not used by these messages)`);
  }
}

function expect(wire: number, want: number, what: string): void {
  if (wire !== want) throw new ProtoError(`${what} has wire type ${wire}, expected ${want}`);
}

/** A repeated numeric field, packed (wire type 2) or not, appended to `out` by `one`. */
function repeated(r: ProtoReader, wire: number, scalarWire: number, what: string, one: (r: ProtoReader) => void): void {
  if (wire === WIRE_BYTES) {
    const packed = r.sub();
    while (!packed.done) one(packed);
  } else {
    expect(wire, scalarWire, what);
    one(r);
  }
}

/** TensorFlow's DataType enum values the scalar decoder reads. */
export const DT = {
  FLOAT: 1,
  DOUBLE: 2,
  INT32: 3,
  UINT8: 4,
  INT16: 5,
  INT8: 6,
  STRING: 7,
  INT64: 9,
  BOOL: 10,
  BFLOAT16: 14,
  UINT16: 17,
  HALF: 19,
  UINT32: 22,
  UINT64: 23,
} as const;

export interface TensorProto {
  dtype: number;
  /** Dimension sizes; [] for a scalar. */
  shape: number[];
  content: Buffer | null;
  /** The typed value lists, as numbers (int64/uint64 beyond 2^53 lose precision, as float64 would). */
  floatVal: number[];
  doubleVal: number[];
  intVal: number[];
  int64Val: number[];
  boolVal: number[];
  halfVal: number[];
  uint32Val: number[];
  uint64Val: number[];
}

function toNumber(v: number | bigint): number {
  return typeof v === 'number' ? v : Number(v);
}

function decodeShape(r: ProtoReader): number[] {
  const dims: number[] = [];
  while (!r.done) {
    const { field, wire } = r.key();
    if (field === 2) {
      expect(wire, WIRE_BYTES, 'TensorShapeProto.dim');
      const d = r.sub();
      let size = 0;
      while (!d.done) {
        const k = d.key();
        if (k.field === 1) {
          expect(k.wire, WIRE_VARINT, 'Dim.size');
          size = toNumber(d.int64());
        } else d.skip(k.wire, k.field);
      }
      dims.push(size);
    } else r.skip(wire, field);
  }
  return dims;
}

function decodeTensor(r: ProtoReader): TensorProto {
  const t: TensorProto = {
    dtype: 0,
    shape: [],
    content: null,
    floatVal: [],
    doubleVal: [],
    intVal: [],
    int64Val: [],
    boolVal: [],
    halfVal: [],
    uint32Val: [],
    uint64Val: [],
  };
  // int32 fields are sign-extended to 64 bits on the wire
  const int32 = (x: ProtoReader) => toNumber(x.int64());
  while (!r.done) {
    const { field, wire } = r.key();
    switch (field) {
      case 1:
        expect(wire, WIRE_VARINT, 'TensorProto.dtype');
        t.dtype = toNumber(r.varint());
        break;
      case 2:
        expect(wire, WIRE_BYTES, 'TensorProto.tensor_shape');
        t.shape = decodeShape(r.sub());
        break;
      case 4:
        expect(wire, WIRE_BYTES, 'TensorProto.tensor_content');
        t.content = r.bytes();
        break;
      case 5:
        repeated(r, wire, WIRE_FIXED32, 'TensorProto.float_val', (x) => t.floatVal.push(x.fixed32().readFloatLE(0)));
        break;
      case 6:
        repeated(r, wire, WIRE_FIXED64, 'TensorProto.double_val', (x) => t.doubleVal.push(x.fixed64().readDoubleLE(0)));
        break;
      case 7:
        repeated(r, wire, WIRE_VARINT, 'TensorProto.int_val', (x) => t.intVal.push(int32(x)));
        break;
      case 10:
        repeated(r, wire, WIRE_VARINT, 'TensorProto.int64_val', (x) => t.int64Val.push(toNumber(x.int64())));
        break;
      case 11:
        repeated(r, wire, WIRE_VARINT, 'TensorProto.bool_val', (x) => t.boolVal.push(toNumber(x.varint()) ? 1 : 0));
        break;
      case 13:
        repeated(r, wire, WIRE_VARINT, 'TensorProto.half_val', (x) => t.halfVal.push(int32(x)));
        break;
      case 16:
        repeated(r, wire, WIRE_VARINT, 'TensorProto.uint32_val', (x) => t.uint32Val.push(toNumber(x.varint())));
        break;
      case 17:
        repeated(r, wire, WIRE_VARINT, 'TensorProto.uint64_val', (x) => t.uint64Val.push(toNumber(x.varint())));
        break;
      default:
        r.skip(wire, field);
    }
  }
  return t;
}

/** One entry of a Summary: a scalar by simple_value, else what it holds. */
export interface SummaryValue {
  tag: string;
  /** Set when the value is a simple_value (tensorboardX, torch.utils.tensorboard, TF1). */
  simpleValue: number | null;
  tensor: TensorProto | null;
  pluginName: string;
  /** SummaryMetadata.data_class (1: scalar). */
  dataClass: number;
  /** histo, image or audio: a summary that is never a scalar. */
  other: 'histogram' | 'image' | 'audio' | null;
}

function decodeMetadata(r: ProtoReader, v: SummaryValue): void {
  while (!r.done) {
    const { field, wire } = r.key();
    if (field === 1) {
      expect(wire, WIRE_BYTES, 'SummaryMetadata.plugin_data');
      const p = r.sub();
      while (!p.done) {
        const k = p.key();
        if (k.field === 1) {
          expect(k.wire, WIRE_BYTES, 'PluginData.plugin_name');
          v.pluginName = p.string();
        } else p.skip(k.wire, k.field);
      }
    } else if (field === 4) {
      expect(wire, WIRE_VARINT, 'SummaryMetadata.data_class');
      v.dataClass = toNumber(r.varint());
    } else r.skip(wire, field);
  }
}

function decodeValue(r: ProtoReader): SummaryValue {
  const v: SummaryValue = { tag: '', simpleValue: null, tensor: null, pluginName: '', dataClass: 0, other: null };
  while (!r.done) {
    const { field, wire } = r.key();
    switch (field) {
      case 1:
        expect(wire, WIRE_BYTES, 'Summary.Value.tag');
        v.tag = r.string();
        break;
      case 2:
        expect(wire, WIRE_FIXED32, 'Summary.Value.simple_value');
        v.simpleValue = r.fixed32().readFloatLE(0);
        break;
      case 4:
      case 5:
      case 6:
        expect(wire, WIRE_BYTES, 'Summary.Value image/histo/audio');
        r.sub();
        v.other = field === 4 ? 'image' : field === 5 ? 'histogram' : 'audio';
        break;
      case 8:
        expect(wire, WIRE_BYTES, 'Summary.Value.tensor');
        v.tensor = decodeTensor(r.sub());
        break;
      case 9:
        expect(wire, WIRE_BYTES, 'Summary.Value.metadata');
        decodeMetadata(r.sub(), v);
        break;
      default:
        r.skip(wire, field);
    }
  }
  return v;
}

export interface TbEvent {
  wallTime: number;
  /** int64: a bigint when it is no safe integer (a negative or huge step). */
  step: number | bigint;
  fileVersion: string | null;
  values: SummaryValue[];
}

/** Decodes one tensorboard.Event; throws ProtoError when the bytes are not one. */
export function decodeEvent(data: Buffer): TbEvent {
  const r = new ProtoReader(data);
  const event: TbEvent = { wallTime: 0, step: 0, fileVersion: null, values: [] };
  while (!r.done) {
    const { field, wire } = r.key();
    switch (field) {
      case 1:
        expect(wire, WIRE_FIXED64, 'Event.wall_time');
        event.wallTime = r.fixed64().readDoubleLE(0);
        break;
      case 2:
        expect(wire, WIRE_VARINT, 'Event.step');
        event.step = r.int64();
        break;
      case 3:
        expect(wire, WIRE_BYTES, 'Event.file_version');
        event.fileVersion = r.string();
        break;
      case 5: {
        expect(wire, WIRE_BYTES, 'Event.summary');
        const s = r.sub();
        while (!s.done) {
          const k = s.key();
          if (k.field === 1) {
            expect(k.wire, WIRE_BYTES, 'Summary.value');
            event.values.push(decodeValue(s.sub()));
          } else s.skip(k.wire, k.field);
        }
        break;
      }
      default:
        r.skip(wire, field);
    }
  }
  return event;
}
