import { createHash } from 'node:crypto';

/**
 * A value the inventory marked secret (`!secret` tag or `{secret: ...}` wrapper). It reaches the
 * host through `reveal()` only; everywhere else (diffs, logs, plans, JSON) it prints as a hash.
 */
export class Secret {
  readonly #value: string;
  constructor(value: string) {
    this.#value = value;
  }
  reveal(): string {
    return this.#value;
  }
  get masked(): string {
    return maskSecret(this.#value);
  }
  toString(): string {
    return this.masked;
  }
  toJSON(): string {
    return this.masked;
  }
  [Symbol.for('nodejs.util.inspect.custom')](): string {
    return this.masked;
  }
}

export function maskSecret(value: string): string {
  return `<secret sha256:${createHash('sha256').update(value).digest('hex').slice(0, 12)}…>`;
}

export function isSecret(v: unknown): v is Secret {
  return v instanceof Secret;
}
