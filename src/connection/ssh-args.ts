// Parsing ansible_ssh_args and friends is reading the inventory: it lives in inventory/ssh-args.ts
// (inventory/ imports nothing from connection/). Kept here for the importers of this path.
export * from '../inventory/ssh-args.ts';
