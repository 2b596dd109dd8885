// Kernel-wide sysfs knobs on the bed's writable fake sysfs (tb.fakeSysfs, test/testbed/README.md):
// transparent hugepages through the node playbook, applied, re-run, dry run, and back after a
// reboot only through what racksmith persisted (each reboot starts the fake from the kernel's
// values again).
import { beforeAll, describe, expect, it } from 'vitest';
import * as tb from '../testbed/api.ts';
import { provision, recaps, writeInventory } from './helpers.ts';

const H = 'tb5';
const PB = 'playbooks/node.ts';
const THP = '/sys/kernel/mm/transparent_hugepage';
const DROPIN = '/etc/tmpfiles.d/racksmith-thp.conf';

const inv = (vars: Record<string, unknown>) => writeInventory({ hosts: [H], vars: { install_packages: false, ...vars } });
const read = async (path: string) => (await tb.hostExec(H, `cat ${path}`)).stdout;
const selected = async (knob: string) => /\[([^\]]+)\]/.exec(await read(`${THP}/${knob}`))?.[1];

beforeAll(async () => {
  await tb.reset([H]);
});

describe('transparent hugepages', () => {
  it('applied live and by a tmpfiles.d drop-in; re-run 0 changes; --check changes nothing; back after a reboot', async () => {
    await tb.reset([H]);
    await tb.fakeSysfs([H]);
    // modes other than the kernel's own at boot, so the reboot shows what the drop-in does
    const boot = { enabled: await selected('enabled'), defrag: await selected('defrag') };
    const want = {
      enabled: boot.enabled === 'never' ? 'always' : 'never',
      defrag: boot.defrag === 'defer+madvise' ? 'never' : 'defer+madvise',
    };
    const vars = { transparent_hugepages: want };

    const check = await provision([PB, '-i', inv(vars), '--check']);
    expect(check.code, check.stderr).toBe(2);
    expect(check.stderr).toContain(`transparent_hugepage/enabled: ${boot.enabled} → ${want.enabled}`);
    expect(await selected('enabled')).toBe(boot.enabled);
    expect((await tb.hostExec(H, `ls ${DROPIN}`)).code).not.toBe(0);

    const first = await provision([PB, '-i', inv(vars), '--json']);
    expect(first.code, first.stderr).toBe(0);
    expect(await selected('enabled')).toBe(want.enabled);
    expect(await selected('defrag')).toBe(want.defrag);
    expect(await read(DROPIN)).toContain(`w ${THP}/enabled - - - - ${want.enabled}\nw ${THP}/defrag - - - - ${want.defrag}\n`);

    const second = await provision([PB, '-i', inv(vars), '--json']);
    expect(recaps(second)[H]).toMatchObject({ changed: 0, failed: 0, execs: 1 });

    await tb.reboot([H]);
    expect(await selected('enabled')).toBe(want.enabled);
    expect(await selected('defrag')).toBe(want.defrag);
    const afterReboot = await provision([PB, '-i', inv(vars), '--json']);
    expect(recaps(afterReboot)[H]).toMatchObject({ changed: 0, failed: 0 });

    // drift by hand: --check reports exactly that and writes nothing
    await tb.hostExec(H, `echo ${boot.enabled} > ${THP}/enabled`);
    const drift = await provision([PB, '-i', inv(vars), '--check', '--json']);
    expect(drift.code, drift.stderr).toBe(2);
    expect(drift.stderr).toContain(`transparent_hugepage/enabled: ${boot.enabled} → ${want.enabled}`);
    expect(drift.stderr).not.toContain('transparent_hugepage/defrag:');
    expect(await selected('enabled')).toBe(boot.enabled);
  });
});

describe('CPU governor on the fake cpufreq', () => {
  const governors = async () =>
    (await tb.hostExec(H, 'cat /sys/devices/system/cpu/cpu[0-9]*/cpufreq/scaling_governor')).stdout.trim().split('\n');

  it('set live on every CPU and by a udev rule; re-run 0 changes; --check after a change by hand writes nothing; back after a reboot where udev can coldplug CPUs', async (ctx) => {
    await tb.reset([H]);
    await tb.fakeSysfs([H]);
    const boot = await governors();
    const want = boot[0] === 'performance' ? 'powersave' : 'performance';
    const vars = { cpu_governor: want };

    const check = await provision([PB, '-i', inv(vars), '--check']);
    expect(check.code, check.stderr).toBe(2);
    expect(check.stderr).toContain(`scaling_governor: ${boot[0]} → ${want}`);
    expect(await governors()).toEqual(boot);

    const first = await provision([PB, '-i', inv(vars), '--json']);
    expect(first.code, first.stderr).toBe(0);
    expect(await governors()).toEqual(boot.map(() => want));
    expect(await read('/etc/udev/rules.d/60-racksmith-cpufreq.rules')).toContain(`ATTR{cpufreq/scaling_governor}="${want}"`);
    const second = await provision([PB, '-i', inv(vars), '--json']);
    expect(recaps(second)[H]).toMatchObject({ changed: 0, failed: 0, execs: 1 });

    await tb.hostExec(H, `echo ${boot[0]} > /sys/devices/system/cpu/cpu0/cpufreq/scaling_governor`);
    const drift = await provision([PB, '-i', inv(vars), '--check']);
    expect(drift.code, drift.stderr).toBe(2);
    expect(drift.stderr).toContain(`cpu0 scaling_governor: ${boot[0]} → ${want}`);
    expect((await governors())[0]).toBe(boot[0]);
    const fix = await provision([PB, '-i', inv(vars), '--json']);
    expect(fix.code, fix.stderr).toBe(0);

    // At boot the rule is applied by udev's coldplug of the CPUs, which takes a device only on
    // sysfs: where the runner has no cpufreq, the fake's cpuN is a tmpfs (test/testbed/README.md).
    const fs = (await tb.hostExec(H, 'stat -f -c %T /sys/devices/system/cpu/cpu0')).stdout.trim();
    if (fs !== 'sysfs')
      ctx.skip(`boot persistence: cpu0 is ${fs} here (the runner has no cpufreq), udevadm refuses a device outside sysfs`);
    await tb.reboot([H]);
    expect(await governors()).toEqual(boot.map(() => want));
    const afterReboot = await provision([PB, '-i', inv(vars), '--json']);
    expect(recaps(afterReboot)[H]).toMatchObject({ changed: 0, failed: 0 });
  });
});
