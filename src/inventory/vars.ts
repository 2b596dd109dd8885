/** A host's or group's variables, by name. */
export type Vars = Record<string, unknown>;
