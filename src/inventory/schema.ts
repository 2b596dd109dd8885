import { lazySchema } from '../util/validate.ts';

/**
 * JSON schema of an Ansible YAML inventory (the parts racksmith reads). Unknown keys in a group
 * are errors (a typo like `host:` must not silently drop hosts); variables are free-form but
 * their names must be identifiers and the connection variables must have the right types.
 */
const NAME = '^[A-Za-z0-9_][A-Za-z0-9_.-]*$';
/** Host keys may use Ansible ranges: `node[01:20].rack1`. */
const HOST_KEY = '^[A-Za-z0-9_.\\-:\\[\\]]+$';
const VAR_NAME = '^[A-Za-z_][A-Za-z0-9_]*$';

export const inventorySchema = {
  $id: 'racksmith/inventory',
  type: 'object',
  minProperties: 1,
  propertyNames: { pattern: NAME },
  additionalProperties: { $ref: '#/definitions/group' },
  definitions: {
    group: {
      type: ['object', 'null'],
      additionalProperties: false,
      properties: {
        hosts: {
          type: ['object', 'null'],
          propertyNames: { pattern: HOST_KEY },
          additionalProperties: { $ref: '#/definitions/hostVars' },
        },
        vars: { $ref: '#/definitions/vars' },
        children: {
          type: ['object', 'null'],
          propertyNames: { pattern: NAME },
          additionalProperties: { $ref: '#/definitions/group' },
        },
      },
    },
    vars: {
      type: ['object', 'null'],
      propertyNames: { pattern: VAR_NAME },
      properties: {
        ansible_host: { type: 'string', pattern: '^[A-Za-z0-9_.:%-]+$', minLength: 1, maxLength: 253 },
        ansible_port: {
          anyOf: [
            { type: 'integer', minimum: 1, maximum: 65535 },
            { type: 'string', pattern: '^([1-9][0-9]{0,3}|[1-5][0-9]{4}|6[0-4][0-9]{3}|65[0-4][0-9]{2}|655[0-2][0-9]|6553[0-5])$' },
          ],
        },
        ansible_user: { type: 'string', pattern: '^[A-Za-z_][A-Za-z0-9_.-]*\\$?$', maxLength: 64 },
        ansible_connection: { enum: ['ssh', 'smart', 'local', 'paramiko'] },
        ansible_ssh_private_key_file: { type: 'string', minLength: 1 },
        ansible_ssh_timeout: {
          anyOf: [
            { type: 'integer', minimum: 1 },
            { type: 'string', pattern: '^[1-9][0-9]*$' },
          ],
        },
      },
    },
    hostVars: { $ref: '#/definitions/vars' },
  },
} as const;

export const validateInventory = lazySchema(inventorySchema);
/** group_vars/ and host_vars/ files and `-e` mappings hold one mapping of variables. */
export const validateVars = lazySchema({ $ref: 'racksmith/inventory#/definitions/vars' }, [inventorySchema]);
