export * from './events.ts';
export * from './playbook.ts';
export * from './run.ts';
