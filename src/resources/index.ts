export { file } from './file.ts';
export { line, block } from './text-edit.ts';
export { directory } from './directory.ts';
export { command } from './command.ts';
export type { Resource, Change, Step } from '../contract/resource.ts';
