/**
 * Just enough of Kubernetes' protobuf encoding to read the bodies of `kubectl create namespace |
 * configmap | secret | serviceaccount`, which kubectl's typed clients send as
 * `application/vnd.kubernetes.protobuf` (everything else kubectl sends is JSON). Other kinds are
 * refused with 415.
 *
 * Wire format: the magic `k8s\0`, then a `runtime.Unknown` {1: TypeMeta{1 apiVersion, 2 kind},
 * 2: raw message}; the raw message is the Go type's protobuf (field numbers as in
 * k8s.io/api/core/v1/generated.proto).
 */
import type { Json, JsonObject, KubeObject } from './types.ts';
import { ApiError } from './errors.ts';

type Field = { no: number; wire: number; int?: number; bytes?: Buffer };

function readFields(buf: Buffer): Field[] {
  const out: Field[] = [];
  let pos = 0;
  const varint = (): number => {
    let result = 0;
    let mul = 1;
    for (;;) {
      if (pos >= buf.length) throw new Error('truncated varint');
      const b = buf[pos++];
      result += (b & 0x7f) * mul;
      if (b < 0x80) return result;
      mul *= 128;
    }
  };
  while (pos < buf.length) {
    const tag = varint();
    const no = Math.floor(tag / 8);
    const wire = tag & 7;
    if (wire === 0) out.push({ no, wire, int: varint() });
    else if (wire === 2) {
      const len = varint();
      out.push({ no, wire, bytes: buf.subarray(pos, pos + len) });
      pos += len;
    } else if (wire === 1) pos += 8;
    else if (wire === 5) pos += 4;
    else throw new Error(`unsupported wire type ${wire}`);
  }
  return out;
}

type Kind = 'string' | 'bytes' | 'int' | 'bool' | 'map' | 'bytesMap' | Schema;
interface Schema {
  [no: number]: [name: string, kind: Kind, repeated?: boolean];
}

const OBJECT_META: Schema = {
  1: ['name', 'string'],
  2: ['generateName', 'string'],
  3: ['namespace', 'string'],
  11: ['labels', 'map'],
  12: ['annotations', 'map'],
  14: ['finalizers', 'string', true],
};
const LOCAL_REF: Schema = { 1: ['name', 'string'] };
const OBJECT_REF: Schema = { 1: ['kind', 'string'], 2: ['namespace', 'string'], 3: ['name', 'string'] };

const SCHEMAS: Record<string, Schema> = {
  'v1/Namespace': { 1: ['metadata', OBJECT_META], 2: ['spec', { 1: ['finalizers', 'string', true] }] },
  'v1/ConfigMap': { 1: ['metadata', OBJECT_META], 2: ['data', 'map'], 3: ['binaryData', 'bytesMap'], 4: ['immutable', 'bool'] },
  'v1/Secret': {
    1: ['metadata', OBJECT_META],
    2: ['data', 'bytesMap'],
    3: ['type', 'string'],
    4: ['stringData', 'map'],
    5: ['immutable', 'bool'],
  },
  'v1/ServiceAccount': {
    1: ['metadata', OBJECT_META],
    2: ['secrets', OBJECT_REF, true],
    3: ['imagePullSecrets', LOCAL_REF, true],
    4: ['automountServiceAccountToken', 'bool'],
  },
};

/** Decodes a message; empty strings, empty maps and empty messages are left out (omitempty). */
function decode(buf: Buffer, schema: Schema): JsonObject {
  const out: JsonObject = {};
  for (const f of readFields(buf)) {
    const spec = schema[f.no];
    if (!spec) continue;
    const [name, kind, repeated] = spec;
    let value: Json | undefined;
    if (kind === 'string') value = f.bytes?.toString('utf8');
    else if (kind === 'bytes') value = f.bytes?.toString('base64');
    else if (kind === 'int') value = f.int;
    else if (kind === 'bool') value = f.int === 1;
    else if (kind === 'map' || kind === 'bytesMap') {
      const entry = decode(f.bytes ?? Buffer.alloc(0), { 1: ['key', 'string'], 2: ['value', kind === 'map' ? 'string' : 'bytes'] });
      const map = (out[name] ?? {}) as JsonObject;
      map[String(entry.key ?? '')] = entry.value ?? '';
      out[name] = map;
      continue;
    } else if (typeof kind === 'object') value = decode(f.bytes ?? Buffer.alloc(0), kind);
    if (repeated) {
      out[name] = [...((out[name] as Json[] | undefined) ?? []), value ?? ''];
      continue;
    }
    const empty = value === undefined || value === '' || (typeof value === 'object' && value !== null && Object.keys(value).length === 0);
    if (!empty || (kind === 'bool' && f.int !== undefined)) out[name] = value as Json;
  }
  return out;
}

export function decodeKubeProtobuf(body: Buffer): KubeObject {
  if (body.length < 4 || body.subarray(0, 4).toString('latin1') !== 'k8s\u0000') {
    throw new ApiError(400, 'BadRequest', 'protobuf body without the k8s magic prefix');
  }
  const unknown = decode(body.subarray(4), {
    1: ['typeMeta', { 1: ['apiVersion', 'string'], 2: ['kind', 'string'] }],
    2: ['raw', 'bytes'],
  });
  const typeMeta = (unknown.typeMeta ?? {}) as JsonObject;
  const key = `${String(typeMeta.apiVersion)}/${String(typeMeta.kind)}`;
  const schema = SCHEMAS[key];
  if (!schema) {
    throw new ApiError(
      415,
      'UnsupportedMediaType',
      `the kube API double decodes protobuf only for ${Object.keys(SCHEMAS).join(', ')} (got ${key}); send JSON (kubectl apply, kubectl create -f)`,
    );
  }
  const obj = decode(Buffer.from(String(unknown.raw ?? ''), 'base64'), schema);
  return {
    apiVersion: String(typeMeta.apiVersion),
    kind: String(typeMeta.kind),
    ...obj,
    metadata: (obj.metadata ?? { name: '' }) as KubeObject['metadata'],
  };
}
