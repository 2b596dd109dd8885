export * from './events.ts';
export * from './run.ts';
