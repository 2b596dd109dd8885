/**
 * In-memory object storage with a global resourceVersion counter and a bounded event history,
 * which watches replay from (so a list followed by a watch misses no change).
 */
import type { GroupResource, KubeObject } from './types.ts';
import { clone } from './json.ts';

export type WatchEventType = 'ADDED' | 'MODIFIED' | 'DELETED';

export interface StoreEvent {
  type: WatchEventType;
  gr: GroupResource;
  /** Shared with the store: listeners must not mutate it (clone first). */
  object: KubeObject;
  resourceVersion: number;
}

export interface StoredObject {
  gr: GroupResource;
  object: KubeObject;
}

const HISTORY_LIMIT = 2000;

function key(gr: GroupResource, namespace: string | undefined, name: string): string {
  return `${gr.group}/${gr.plural}/${namespace ?? ''}/${name}`;
}

export class ObjectStore {
  private readonly objects = new Map<string, StoredObject>();
  private rv = 0;
  private readonly history: StoreEvent[] = [];
  private readonly listeners = new Set<(e: StoreEvent) => void>();

  /** The latest resourceVersion handed out (what a list reports). */
  get resourceVersion(): number {
    return this.rv;
  }

  get(gr: GroupResource, namespace: string | undefined, name: string): KubeObject | undefined {
    const s = this.objects.get(key(gr, namespace, name));
    return s ? clone(s.object) : undefined;
  }

  /** Objects of one type, optionally in one namespace, sorted by namespace then name. */
  list(gr: GroupResource, namespace?: string): KubeObject[] {
    const out: KubeObject[] = [];
    for (const s of this.objects.values()) {
      if (s.gr.group !== gr.group || s.gr.plural !== gr.plural) continue;
      if (namespace !== undefined && s.object.metadata.namespace !== namespace) continue;
      out.push(clone(s.object));
    }
    return out.sort(
      (a, b) => (a.metadata.namespace ?? '').localeCompare(b.metadata.namespace ?? '') || a.metadata.name.localeCompare(b.metadata.name),
    );
  }

  /** Every stored object with its group/resource. */
  all(): StoredObject[] {
    return [...this.objects.values()].map((s) => ({ gr: { ...s.gr }, object: clone(s.object) }));
  }

  /** Stores an object, giving it the next resourceVersion. Returns the stored copy. */
  put(gr: GroupResource, object: KubeObject): KubeObject {
    const k = key(gr, object.metadata.namespace, object.metadata.name);
    const type: WatchEventType = this.objects.has(k) ? 'MODIFIED' : 'ADDED';
    const stored = clone(object);
    stored.metadata.resourceVersion = String(++this.rv);
    // stored objects are never mutated (reads clone), so the event can share the reference
    this.objects.set(k, { gr: { ...gr }, object: stored });
    this.emit({ type, gr, object: stored, resourceVersion: this.rv });
    return clone(stored);
  }

  delete(gr: GroupResource, namespace: string | undefined, name: string): KubeObject | undefined {
    const k = key(gr, namespace, name);
    const s = this.objects.get(k);
    if (!s) return undefined;
    this.objects.delete(k);
    const gone = clone(s.object);
    gone.metadata.resourceVersion = String(++this.rv);
    this.emit({ type: 'DELETED', gr, object: gone, resourceVersion: this.rv });
    return clone(gone);
  }

  /** Events after `resourceVersion`, or undefined when the history no longer reaches back that far. */
  eventsSince(resourceVersion: number): StoreEvent[] | undefined {
    const first = this.history[0];
    if (first && first.resourceVersion > resourceVersion + 1 && this.history.length >= HISTORY_LIMIT) return undefined;
    return this.history.filter((e) => e.resourceVersion > resourceVersion);
  }

  subscribe(listener: (e: StoreEvent) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  private emit(e: StoreEvent): void {
    this.history.push(e);
    if (this.history.length > HISTORY_LIMIT) this.history.shift();
    for (const l of this.listeners) l(e);
  }
}
