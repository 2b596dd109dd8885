// restartHandler: what it would do per host facts, and the steps it sends (run here on a stand-in
// systemctl to see the health check poll and fail).
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { NotApplicable } from '../../../../src/contract/resource.ts';
import { textOutput } from '../../../../src/contract/probe.ts';
import { KUBELET_HEALTHZ, pollScript, restartDisrupts, restartHandler } from '../../../../src/resources/core/service.ts';
import { InputError } from '../../../../src/util/errors.ts';

describe('restartHandler', () => {
  const h = restartHandler({ service: 'kubelet', healthUrl: KUBELET_HEALTHZ });

  it.each<[string, Parameters<typeof restartDisrupts>[0], boolean]>([
    ['a kubelet restart', { service: 'kubelet' }, true],
    ['a containerd restart', { service: 'containerd' }, true],
    ['a kubelet reload', { service: 'kubelet', action: 'reload' }, false],
    ['a chrony restart', { service: 'chrony' }, false],
    ['a restart the playbook marks', { service: 'slurmd', disruptive: true }, true],
    ['a kubelet restart the playbook unmarks', { service: 'kubelet', disruptive: false }, false],
  ])('disruptive: %s -> %s', (_, o, want) => {
    expect(restartDisrupts(o) !== undefined).toBe(want);
    expect(restartHandler(o).diff({ systemd: true })[0].disruptive !== undefined).toBe(want);
  });

  it('is a handler with id restart:UNIT', () => {
    expect(h).toMatchObject({ id: 'restart:kubelet', handler: true, verifiable: false });
    expect(restartHandler({ service: 'chrony', action: 'reload' }).id).toBe('reload:chrony');
  });

  it.each<[string, boolean, string[] | RegExp]>([
    ['systemd runs: restart', true, ['restart kubelet']],
    ['no systemd: not applicable, with why', false, /^not restarted: no systemd$/],
  ])('%s', (_, systemd, want) => {
    if (Array.isArray(want)) expect(h.diff({ systemd }).map((c) => c.summary)).toEqual(want);
    else {
      expect(() => h.diff({ systemd })).toThrow(NotApplicable);
      expect(() => h.diff({ systemd })).toThrow(want);
    }
  });

  it('parses its probe', () => {
    expect(h.parse({ ...textOutput(''), parts: ['systemd=yes\n'] })).toEqual({ systemd: true });
    expect(h.parse({ ...textOutput(''), parts: ['systemd=no\n'] })).toEqual({ systemd: false });
  });

  it('steps: restart, is-active, then the health URL; values through shq', () => {
    const steps = h.apply({ systemd: true }, [{ summary: 'restart kubelet' }]);
    expect(steps.map((s) => s.name)).toEqual(['restart kubelet', 'kubelet is active', 'kubelet is healthy']);
    expect(steps[0].script).toBe('systemctl restart kubelet');
    expect(steps[2].script).toContain(`curl -fsS -o /dev/null --max-time 5 ${KUBELET_HEALTHZ}`);
  });

  it.each([['kube let'], ['$(x)'], ['']])('refuses the unit %j', (u) => {
    expect(() => restartHandler({ service: u })).toThrow(InputError);
  });

  it('the poll succeeds once the check does, and fails with its message after the timeout', () => {
    const dir = mkdtempSync(join(tmpdir(), 'rs-poll-'));
    const check = join(dir, 'check');
    // succeeds on its second call
    writeFileSync(check, `#!/bin/sh\n[ -e ${dir}/seen ] && exit 0\ntouch ${dir}/seen; exit 1\n`);
    chmodSync(check, 0o755);
    expect(spawnSync('/bin/sh', ['-c', pollScript(check, 5, 'never')]).status).toBe(0);
    const fail = spawnSync('/bin/sh', ['-c', pollScript('false', 1, 'svc is not active after 1s')], { encoding: 'utf8' });
    expect(fail.status).toBe(1);
    expect(fail.stderr).toBe('svc is not active after 1s\n');
  });
});
