import { readFileSync, statSync } from 'node:fs';
import type { Document, Node, Pair, ScalarTag, YAMLMap } from 'yaml';
import { yamlLib } from '../util/yaml-lib.ts';
import { InputError, type SourcePos } from '../util/errors.ts';
import { Secret } from '../util/secret.ts';
import { locate, parsePlainYaml } from './plain-yaml.ts';

/** Inventories are small; anything bigger is a mistake or an attack, refused before parsing. */
export const MAX_YAML_BYTES = 4 * 1024 * 1024;
/** Alias expansions allowed per document: stops "billion laughs" bombs. */
const MAX_ALIAS_COUNT = 200;

const secretTag: ScalarTag = {
  tag: '!secret',
  resolve: (str: string) => new Secret(str),
};

/** A parsed YAML file that can still say where each value was written. */
export class YamlSource {
  private constructor(
    readonly file: string,
    readonly value: unknown,
    /** The offset of the node at a path (see pos), in the library's document or the plain reader's. */
    private readonly offsetOf: (path: ReadonlyArray<string | number>, key: boolean) => number,
    private readonly linePos: (offset: number) => { line: number; col: number },
  ) {}

  static read(file: string): YamlSource {
    let size: number;
    try {
      size = statSync(file).size;
    } catch (e) {
      throw new InputError(`cannot read: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`, { file });
    }
    if (size > MAX_YAML_BYTES) throw new InputError(`file is ${size} bytes; the limit is ${MAX_YAML_BYTES}`, { file });
    return YamlSource.parse(file, readFileSync(file, 'utf8'));
  }

  /** `reader: 'library'` skips the plain reader (tests compare the two). */
  static parse(file: string, text: string, reader: 'auto' | 'library' = 'auto'): YamlSource {
    if (text.length > MAX_YAML_BYTES) throw new InputError(`text is ${text.length} bytes; the limit is ${MAX_YAML_BYTES}`, { file });
    // Plain block YAML (nearly every inventory) is read ~20x faster without the library's
    // document model; anything else, and every error, is the library's.
    const plain = reader === 'auto' ? parsePlainYaml(text) : undefined;
    if (plain)
      return new YamlSource(file, plain.value, (path, key) => locate(plain.root, path, key), lineCounterOf(text)).withSecretsUnwrapped(
        text,
      );
    const { LineCounter, parseDocument } = yamlLib();
    let lines = new LineCounter();
    const options = { lineCounter: lines, customTags: [secretTag], prettyErrors: false, uniqueKeys: false };
    // The yaml library checks unique keys with a scan of the map per key (quadratic in a
    // 1,000-host `hosts:`); they are checked here in one pass, and only a document that may have
    // an error is parsed again with the library's check, for the same first error as always.
    let doc = parseDocument(text, options);
    if (doc.errors.length || hasDuplicateKey(doc)) {
      lines = new LineCounter();
      doc = parseDocument(text, { ...options, lineCounter: lines, uniqueKeys: true });
    }
    const first = doc.errors[0];
    if (first) {
      const lp = lines.linePos(first.pos[0]);
      const near = text.slice(first.pos[0]).split('\n')[0].trim().slice(0, 60);
      throw new InputError(`YAML: ${first.message.split('\n')[0]}${near ? ` (at '${near}')` : ''}`, { file, line: lp.line, col: lp.col });
    }
    let value: unknown;
    try {
      value = doc.toJS({ maxAliasCount: MAX_ALIAS_COUNT });
    } catch (e) {
      throw new InputError(`YAML: ${(e as Error).message}`, { file, line: 1, col: 1 });
    }
    if (isCyclic(value))
      throw new InputError('YAML: an alias refers to the mapping that contains it (recursive structure)', { file, line: 1, col: 1 });
    const located = new DocumentOffsets(doc);
    return new YamlSource(
      file,
      value,
      (path, key) => located.offset(path, key),
      (offset) => lines.linePos(offset),
    ).withSecretsUnwrapped(text);
  }

  /**
   * The other way to mark a secret, for files that cannot carry a YAML tag (JSON vars files, -e
   * JSON): a mapping whose only key is `secret`, holding a string (`{"secret": "s3cr3t"}`), is
   * that string as a Secret, wherever it stands.
   */
  private withSecretsUnwrapped(text: string): YamlSource {
    if (!text.includes('secret')) return this; // nothing to look for (nearly every inventory)
    // In place: the parsed value is this source's own (and an own `__proto__` key stays a key).
    const unwrap = (v: unknown, path: Array<string | number>): unknown => {
      if (v === null || typeof v !== 'object' || v instanceof Secret) return v;
      const o = v as Record<string, unknown>;
      const keys = Object.keys(o);
      if (!Array.isArray(v) && keys.length === 1 && keys[0] === 'secret') {
        if (typeof o.secret === 'string') return new Secret(o.secret);
        if (o.secret instanceof Secret) return o.secret;
        // YAML has already made `secret: 0123` the number 123: what the user wrote is lost
        throw new InputError(
          `a secret must be a string (quote it): got ${o.secret === null ? 'null' : typeof o.secret}`,
          this.pos([...path, 'secret']),
        );
      }
      for (const k of keys) o[k] = unwrap(o[k], [...path, Array.isArray(v) ? Number(k) : k]);
      return v;
    };
    const value = unwrap(this.value, []);
    return value === this.value ? this : new YamlSource(this.file, value, this.offsetOf, this.linePos);
  }

  /**
   * Position of the value at `path`, or of its key when `key` is set (errors about a key name
   * should point at the key). Falls back to the nearest existing ancestor.
   */
  pos(path: ReadonlyArray<string | number>, key = false): SourcePos {
    const lp = this.linePos(this.offsetOf(path, key));
    return { file: this.file, line: lp.line, col: lp.col };
  }
}

/** Line and column (both from 1) of an offset, as the library's LineCounter gives them. */
function lineCounterOf(text: string): (offset: number) => { line: number; col: number } {
  let starts: number[] | undefined;
  return (offset) => {
    if (!starts) {
      starts = [0];
      for (let i = text.indexOf('\n'); i >= 0; i = text.indexOf('\n', i + 1)) starts.push(i + 1);
    }
    // the first line start at or after the offset (LineCounter.linePos)
    let low = 0;
    let high = starts.length;
    while (low < high) {
      const mid = (low + high) >> 1;
      if (starts[mid] < offset) low = mid + 1;
      else high = mid;
    }
    if (starts[low] === offset) return { line: low + 1, col: 1 };
    if (low === 0) return { line: 0, col: offset };
    return { line: low, col: offset - starts[low - 1] + 1 };
  };
}

/** Node offsets in a document the library parsed. */
class DocumentOffsets {
  constructor(private readonly doc: Document.Parsed) {}

  offset(path: ReadonlyArray<string | number>, key: boolean): number {
    const { isMap, isSeq } = yamlLib();
    let node: unknown = this.doc.contents;
    let best: Node | null = (this.doc.contents as Node | null) ?? null;
    for (let i = 0; i < path.length; i++) {
      const seg = path[i];
      const last = i === path.length - 1;
      if (isMap(node)) {
        const pair = this.pairs(node).get(String(seg));
        if (!pair) break;
        if (last && key && pair.key) {
          best = pair.key as Node;
          break;
        }
        node = pair.value;
        best = (pair.value as Node | null) ?? (pair.key as Node);
      } else if (isSeq(node)) {
        node = node.items[Number(seg)];
        if (!node) break;
        best = node as Node;
      } else break;
    }
    return best?.range?.[0] ?? 0;
  }

  // The loader asks for the position of every host and variable: a key index per map, built
  // once, instead of a scan of (say) 1,000 hosts per question.
  private readonly index = new WeakMap<YAMLMap, Map<string, Pair>>();
  /** A map's pairs by key text (the first pair when two keys print the same, as a scan finds it). */
  private pairs(map: YAMLMap): Map<string, Pair> {
    let byKey = this.index.get(map);
    if (!byKey) {
      const { isPair, isScalar } = yamlLib();
      byKey = new Map();
      for (const p of map.items) {
        if (!isPair(p) || !isScalar(p.key)) continue;
        const k = String(p.key.value);
        if (!byKey.has(k)) byKey.set(k, p as Pair);
      }
      this.index.set(map, byKey);
    }
    return byKey;
  }
}

/** Whether some map may repeat a scalar key (the library's test: same value; NaN is rechecked there). */
function hasDuplicateKey(doc: Document.Parsed): boolean {
  const { isScalar, visit } = yamlLib();
  let dup = false;
  visit(doc, {
    Map(_, map) {
      const seen = new Set<unknown>();
      for (const p of map.items) {
        if (!isScalar(p.key)) continue;
        if (seen.has(p.key.value)) {
          dup = true;
          return visit.BREAK;
        }
        seen.add(p.key.value);
      }
    },
  });
  return dup;
}

/** Aliases can make a value contain itself; nothing downstream can walk that. */
function isCyclic(value: unknown, path = new Set<object>()): boolean {
  if (value === null || typeof value !== 'object') return false;
  if (path.has(value)) return true;
  path.add(value);
  for (const v of Object.values(value)) if (isCyclic(v, path)) return true;
  path.delete(value);
  return false;
}
