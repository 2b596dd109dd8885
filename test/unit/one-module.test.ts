// Inside the repository, `import ... from 'racksmith'` (as the guide writes it) is src/index.ts,
// not a second copy of the code in dist/: the package's `racksmith-source` export condition, which
// vitest.config.ts, tsconfig.json (tsc) and `tsx --conditions=racksmith-source` use. With two
// copies, the engine's `instanceof NotApplicable` would call a skip thrown by a playbook a failure.
import { describe, expect, it } from 'vitest';
import { NotApplicable, Refusal, playbook } from 'racksmith';
import { NotApplicable as SrcNotApplicable, Refusal as SrcRefusal } from '../../src/contract/resource.ts';
import { playbook as srcPlaybook } from '../../src/contract/playbook.ts';

describe("'racksmith' in the checkout", () => {
  it('is the sources: one class, one function', () => {
    expect(NotApplicable).toBe(SrcNotApplicable);
    expect(Refusal).toBe(SrcRefusal);
    expect(playbook).toBe(srcPlaybook);
    expect(new NotApplicable('x')).toBeInstanceOf(SrcNotApplicable);
  });
});
