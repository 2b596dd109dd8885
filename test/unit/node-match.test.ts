// Which record of a run's drains is a node (history/node-match.ts): by scheduler, controller and
// name; by scheduler and name alone only when that leaves one on each side (a controller spelled
// two ways); never a guess between two clusters' nodes of one name.
import { describe, expect, it } from 'vitest';
import type { DrainNode } from '../../src/contract/drain.ts';
import { findNode, type NodeMatch } from '../../src/history/node-match.ts';

const node = (controller: string, name = 'n1', via = 'slurm'): DrainNode => ({ via, controller, node: name });
const A = node('ctlA');
const B = node('ctlB');

describe('findNode', () => {
  it.each<[string, DrainNode, DrainNode[], number, NodeMatch<DrainNode>]>([
    ['its own controller', A, [B, A], 1, { kind: 'found', it: A }],
    ['its own controller, another node of the name beside it', A, [node('10.0.0.1'), A], 2, { kind: 'found', it: A }],
    [
      'the only one of its name, the controller spelled another way',
      node('10.0.0.1'),
      [A, node('ctlA', 'n2')],
      1,
      { kind: 'found', it: A },
    ],
    ['the only node of its name, in two records', node('10.0.0.1'), [A, A], 1, { kind: 'found', it: A }],
    ['none of its name', A, [node('ctlA', 'n2'), node('ctlA', 'n1', 'kubernetes')], 1, { kind: 'none' }],
    ['nothing at all', A, [], 1, { kind: 'none' }],
    ['two of its name, neither its controller: not a guess', node('10.0.0.1'), [A, B], 1, { kind: 'ambiguous', of: [A, B] }],
    ['one of its name, but two of that name on its own side', node('10.0.0.1'), [A], 2, { kind: 'ambiguous', of: [A] }],
  ])('%s', (_, n, among, rivals, want) => expect(findNode(n, among, (x) => x, rivals)).toEqual(want));
});
