#!/usr/bin/env node
// Entry point: lets Node load the TypeScript sources and playbooks directly (through tsx).
import { register } from 'tsx/esm/api';

register();
const { main } = await import('../src/cli.ts');
await main(process.argv.slice(2));
