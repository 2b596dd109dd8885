import { lazySchema } from '../util/validate.ts';

/**
 * JSON schema of a mapping of variables (a group's or host's vars, a vars file, `-e`): names
 * must be identifiers and the connection variables racksmith reads must have the right types.
 * Checked where each mapping is written, so the error names that file:line.
 */
const VAR_NAME = '^[A-Za-z_][A-Za-z0-9_]*$';
const HOST = { type: 'string', pattern: '^[A-Za-z0-9_.:%-]+$', minLength: 1, maxLength: 253 };
const PORT = {
  description: 'a port number from 1 to 65535',
  anyOf: [
    { type: 'integer', minimum: 1, maximum: 65535 },
    { type: 'string', pattern: '^([1-9][0-9]{0,3}|[1-5][0-9]{4}|6[0-4][0-9]{3}|65[0-4][0-9]{2}|655[0-2][0-9]|6553[0-5])$' },
  ],
};
const USER = { type: 'string', pattern: '^[A-Za-z_][A-Za-z0-9_.-]*\\$?$', maxLength: 64 };
// A file path: PATH_MAX, no control characters (they would only ever name the wrong file).
const PATH = { type: 'string', minLength: 1, maxLength: 4096, pattern: '^[^\\x00-\\x1f\\x7f]+$' };
const TIMEOUT = {
  description: 'a number of seconds from 1 to 86400',
  anyOf: [
    { type: 'integer', minimum: 1, maximum: 86400 },
    { type: 'string', pattern: '^[1-9][0-9]{0,4}$' },
  ],
};

export const varsSchema = {
  $id: 'racksmith/vars',
  type: ['object', 'null'],
  propertyNames: { pattern: VAR_NAME },
  properties: {
    ansible_host: HOST,
    ansible_ssh_host: HOST,
    ansible_port: PORT,
    ansible_ssh_port: PORT,
    ansible_user: USER,
    ansible_ssh_user: USER,
    ansible_connection: { enum: ['ssh', 'smart', 'local', 'paramiko'] },
    ansible_ssh_private_key_file: PATH,
    ansible_private_key_file: PATH,
    ansible_ssh_timeout: TIMEOUT,
    ansible_timeout: TIMEOUT,
    racksmith_known_hosts: PATH,
    racksmith_ssh_jump: { type: 'string', minLength: 1, maxLength: 330 },
  },
} as const;

/** Inventory vars sections, host vars, group_vars/ and host_vars/ files and `-e` mappings. */
export const validateVars = lazySchema(varsSchema);

/** A `hosts:` mapping's host variables, checked in one call (a 1,000-host section: one call, not 1,000). */
export const validateHostsVars = lazySchema({ type: 'object', additionalProperties: { $ref: 'racksmith/vars' } }, [varsSchema]);
