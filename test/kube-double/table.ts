/** Server-side printing (meta.k8s.io/v1 Table), which `kubectl get` asks for by default. */
import type { Json, JsonObject, KubeObject } from './types.ts';
import { getDotted, isPlainObject } from './json.ts';

export interface PrinterColumn {
  name: string;
  type: string;
  jsonPath: string;
  description?: string;
  priority?: number;
}

export function wantsTable(accept: string | undefined): boolean {
  return !!accept && /as=Table/.test(accept);
}

/** additionalPrinterColumns of a CRD's version ([] for built-ins or when none are declared). */
export function printerColumns(crd: KubeObject | undefined, version: string): PrinterColumn[] {
  const spec = crd?.spec;
  const versions = isPlainObject(spec) && Array.isArray(spec.versions) ? spec.versions.filter(isPlainObject) : [];
  const cols = versions.find((v) => v.name === version)?.additionalPrinterColumns;
  return Array.isArray(cols)
    ? cols.filter(isPlainObject).map((c) => ({
        name: String(c.name),
        type: String(c.type ?? 'string'),
        jsonPath: String(c.jsonPath ?? ''),
        description: typeof c.description === 'string' ? c.description : undefined,
        priority: typeof c.priority === 'number' ? c.priority : 0,
      }))
    : [];
}

function cell(o: KubeObject, jsonPath: string): Json {
  const v = getDotted(o, jsonPath.replace(/^\./, ''));
  if (v === undefined || v === null) return null;
  return typeof v === 'object' ? JSON.stringify(v) : (v as Json);
}

export function tableFor(items: KubeObject[], resourceVersion: string, includeObject: string, columns: PrinterColumn[]): JsonObject {
  const cols: PrinterColumn[] = [
    { name: 'Name', type: 'string', jsonPath: '.metadata.name', description: 'Name must be unique within a namespace.' },
    ...(columns.length
      ? columns
      : [{ name: 'Created At', type: 'date', jsonPath: '.metadata.creationTimestamp', description: 'CreationTimestamp of the object.' }]),
  ];
  const columnDefinitions = cols.map((c, i) => ({
    name: c.name,
    type: c.type,
    format: i === 0 ? 'name' : '',
    description: c.description ?? '',
    priority: c.priority ?? 0,
  }));
  const rows = items.map((o) => {
    const row: JsonObject = { cells: cols.map((c) => cell(o, c.jsonPath)) };
    if (includeObject === 'Object') row.object = o as unknown as Json;
    else if (includeObject !== 'None')
      row.object = { kind: 'PartialObjectMetadata', apiVersion: 'meta.k8s.io/v1', metadata: o.metadata as unknown as Json };
    return row;
  });
  return { kind: 'Table', apiVersion: 'meta.k8s.io/v1', metadata: { resourceVersion }, columnDefinitions, rows };
}
