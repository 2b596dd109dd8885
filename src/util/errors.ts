/** Where in which file something was written. line and col are 1-based. */
export interface SourcePos {
  file: string;
  line?: number;
  col?: number;
}

export function formatPos(pos: SourcePos): string {
  if (pos.line === undefined) return pos.file;
  return `${pos.file}:${pos.line}:${pos.col ?? 1}`;
}

/**
 * Bad input (inventory, playbook, arguments). Raised before any remote command runs; the CLI
 * turns it into exit code 3. The message starts with file:line:col when the position is known.
 */
export class InputError extends Error {
  constructor(
    readonly detail: string,
    readonly pos?: SourcePos,
  ) {
    super(pos ? `${formatPos(pos)}: ${detail}` : detail);
    this.name = 'InputError';
  }
}

/** Several input errors reported together, so the user fixes them in one pass. */
export class InputErrors extends InputError {
  constructor(readonly errors: InputError[]) {
    super(errors.map((e) => e.message).join('\n'));
    this.name = 'InputErrors';
  }
}
