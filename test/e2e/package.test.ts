// racksmith as a package operators build on: `npm pack`'s tarball installed (offline, from the npm
// cache `npm ci` filled) into a project outside the checkout, whose own playbook imports from
// 'racksmith', type-checks against the package's declarations (with docs/playbooks.md's tsconfig
// and nothing else installed: no skipLibCheck, no @types/node of its own), and runs on the bed.
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import * as tb from '../testbed/api.ts';
import { recaps, repoRoot, writeInventory } from './helpers.ts';

const HOST = 'tb2';
const project = mkdtempSync(join(tmpdir(), 'rs-user-project-'));
const pkg = JSON.parse(execFileSync('cat', [join(repoRoot, 'package.json')], { encoding: 'utf8' }));

const PLAYBOOK = `import { file, line, playbook, type HostContext, type Resource } from 'racksmith';

// an operator's own composition, in their own repository
function motd(host: HostContext): Resource[] {
  return [
    file({ path: '/etc/rs-user-motd', content: \`managed for \${host.name}\\n\`, mode: '0644' }),
    line({ path: '/etc/rs-user-rack', line: \`rack: \${host.var('rack', 'none')}\`, create: true }),
  ];
}

export default playbook({ name: 'operator playbook', hosts: 'all', resources: motd });
`;

function inProject(cmd: string, args: string[]) {
  return spawnSync(cmd, args, {
    cwd: project,
    encoding: 'utf8',
    timeout: 180_000,
    // (as an operator's shell: without the checkout's racksmith-source condition, .npmrc)
    env: { ...process.env, NODE_OPTIONS: undefined, npm_config_update_notifier: 'false' },
  });
}

beforeAll(async () => {
  await tb.reset([HOST]);
  // the tarball of this checkout (dist/ as built by `npm ci`; --ignore-scripts: no rebuild here)
  execFileSync('npm', ['pack', '--ignore-scripts', '--silent', '--pack-destination', project], { cwd: repoRoot, stdio: 'ignore' });
  const tarball = readdirSync(project).find((f) => f.endsWith('.tgz'))!;
  writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'rack-ops', private: true, type: 'module' }, null, 2));
  writeFileSync(
    join(project, 'tsconfig.json'),
    JSON.stringify({
      compilerOptions: {
        target: 'ES2022',
        module: 'NodeNext',
        moduleResolution: 'NodeNext',
        strict: true,
        noEmit: true,
      },
    }),
  );
  const dev = pkg.devDependencies as Record<string, string>;
  const install = inProject('npm', ['install', '--offline', '--no-audit', '--no-fund', `./${tarball}`, `typescript@${dev.typescript}`]);
  if (install.status !== 0) throw new Error(`npm install --offline failed: ${install.stderr}`);
}, 300_000);

describe('a playbook outside the checkout, on racksmith installed from its tarball', () => {
  it('type-checks against the package, and a type error in it is caught', () => {
    writeFileSync(join(project, 'site.ts'), PLAYBOOK);
    const ok = inProject('npx', ['tsc', '-p', '.']);
    expect(ok.status, ok.stdout + ok.stderr).toBe(0);
    writeFileSync(join(project, 'broken.ts'), "import { file } from 'racksmith';\nexport const r = file({ path: 42 });\n");
    const bad = inProject('npx', ['tsc', '-p', '.']);
    expect(bad.status).not.toBe(0);
    expect(bad.stdout).toMatch(/broken\.ts.*Type 'number' is not assignable to type 'string'/);
    execFileSync('rm', [join(project, 'broken.ts')]);
  });

  it("resolves 'racksmith' to the package's built code, not its sources", () => {
    const r = inProject('node', ['--input-type=module', '-e', "console.log(import.meta.resolve('racksmith'))"]);
    expect(r.stdout.trim(), r.stderr).toMatch(/\/node_modules\/racksmith\/dist\/src\/index\.js$/);
  });

  it("runs with the installed package's provision: converges, then 0 changes", async () => {
    writeFileSync(join(project, 'site.ts'), PLAYBOOK);
    const inv = writeInventory({ hosts: [HOST], hostVars: { [HOST]: { rack: 'r12' } } });
    const provision = join(project, 'node_modules', '.bin', 'provision');
    const run = (args: string[]) => {
      const r = inProject(provision, ['site.ts', '-i', inv, '--json', ...args]);
      const events = r.stdout
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l));
      return { code: r.status ?? -1, stderr: r.stderr, stdout: r.stdout, events };
    };
    const first = run([]);
    expect(first.code, first.stderr).toBe(0);
    expect(recaps(first)[HOST]).toMatchObject({ changed: 2, failed: 0 });
    const again = run([]);
    expect(again.code, again.stderr).toBe(0);
    expect(recaps(again)[HOST]).toMatchObject({ changed: 0, ok: 2, execs: 1 });
    expect((await tb.hostExec(HOST, 'cat /etc/rs-user-motd /etc/rs-user-rack')).stdout).toBe(`managed for ${HOST}\nrack: r12\n`);
  });
});

/**
 * The project type-checks; an inventory of HOST for the bundled network play (without the keys a
 * network namespace of the bed does not have, as the other e2e files leave them out); the
 * installed provision.
 */
function typeCheckedForTheBed(): { inv: string; provision: string } {
  const types = inProject('npx', ['tsc', '-p', '.']);
  expect(types.status, types.stdout + types.stderr).toBe(0);
  const inv = writeInventory({
    hosts: [HOST],
    vars: { sysctl_overrides: { 'net.core.netdev_max_backlog': null, 'net.ipv4.tcp_mem': null } },
  });
  return { inv, provision: join(project, 'node_modules', '.bin', 'provision') };
}

describe("a bundled play composed with the operator's own (racksmith/playbooks/NAME)", () => {
  it('type-checks, applies, and re-runs with no change', async () => {
    writeFileSync(
      join(project, 'composed.ts'),
      `import network from 'racksmith/playbooks/network';
import { file, playbook, type Playbook } from 'racksmith';

const bundled: Playbook = network;
export default playbook({
  name: 'rack ops',
  plays: [...bundled.plays, { name: 'motd', hosts: 'all', resources: (h) => [file({ path: '/etc/rs-composed', content: \`after network on \${h.name}\\n\` })] }],
});
`,
    );
    const { inv, provision } = typeCheckedForTheBed();
    const first = inProject(provision, ['composed.ts', '-i', inv, '--json']);
    expect(first.status, first.stderr).toBe(0);
    const plays = first.stdout
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l))
      .filter((e) => e.type === 'play_start')
      .map((e) => e.play);
    expect(plays).toEqual(['network tuning', 'motd']);
    const again = inProject(provision, ['composed.ts', '-i', inv, '--check']);
    expect(again.status, again.stderr).toBe(0);
    expect((await tb.hostExec(HOST, 'cat /etc/rs-composed; sysctl -n net.core.somaxconn')).stdout).toBe(
      `after network on ${HOST}\n65535\n`,
    );
  });
});

describe('in a project without "type": "module" (npm init\'s default)', () => {
  it('a .ts playbook composing a bundled play and a .js playbook, with import syntax, type-check and run', async () => {
    // the same installed project, turned into npm's default: CommonJS packages, a bundler-style tsconfig
    writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'rack-ops', version: '1.0.0', private: true }, null, 2));
    writeFileSync(
      join(project, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          target: 'ES2022',
          module: 'preserve',
          moduleResolution: 'bundler',
          strict: true,
          noEmit: true,
        },
      }),
    );
    writeFileSync(join(project, 'motd.ts'), 'export const motdText = (name: string): string => `cjs project ${name}\\n`;\n');
    writeFileSync(
      join(project, 'site.ts'),
      "import { file, playbook } from 'racksmith';\nimport network from 'racksmith/playbooks/network';\nimport { motdText } from './motd';\n" +
        "export default playbook({ name: 'cjs', plays: [...network.plays, { name: 'motd', hosts: 'all', resources: (h) => [file({ path: '/etc/rs-cjs-ts', content: motdText(h.name) })] }] });\n",
    );
    writeFileSync(
      join(project, 'site.js'),
      "import { file, playbook } from 'racksmith';\n" +
        "export default playbook({ name: 'cjs js', hosts: 'all', resources: () => [file({ path: '/etc/rs-cjs-js', content: 'js\\n' })] });\n",
    );
    const { inv, provision } = typeCheckedForTheBed();
    for (const pb of ['site.ts', 'site.js']) {
      const r = inProject(provision, [pb, '-i', inv]);
      expect(r.status, r.stderr).toBe(0);
      const again = inProject(provision, [pb, '-i', inv, '--check']);
      expect(again.status, again.stderr).toBe(0);
    }
    expect((await tb.hostExec(HOST, 'cat /etc/rs-cjs-ts /etc/rs-cjs-js')).stdout).toBe(`cjs project ${HOST}\njs\n`);
  });
});
