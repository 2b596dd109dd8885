// npm run testbed -- up --hosts N [--disks K] [--slurm] | slurm tb1 tb2 | down [--purge] | reboot tb2 tb3 | reset tb2 |
//                    status | exec tb1 'shell command'
import { parseArgs } from 'node:util';
import * as tb from './api.ts';

const usage = `usage: npm run testbed -- <command>
  up --hosts N [--disks K] [--slurm]
                             fresh bed of N hosts (tb1..tbN) with K loop disks each (default 3, 1);
                             --slurm: a Slurm cluster on them (tb1 the controller)
  slurm tb1 tb2 [...]        a Slurm cluster on these hosts (the first the controller)
  down [--purge]             remove everything the bed created (--purge: also the cached rootfs)
  reboot tb2 [tb3 ...]       "reboot" hosts (upper dir and disks persist)
  reset tb2 [tb3 ...]        make hosts fresh as after up (wipe upper dir, zero disks)
  status                     list the running bed's hosts
  exec tb1 'cmd'             run a shell command inside a host (nsenter, no ssh)`;

async function main(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      hosts: { type: 'string', short: 'n' },
      disks: { type: 'string', short: 'k' },
      purge: { type: 'boolean' },
      slurm: { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  const [cmd, ...rest] = positionals;
  if (values.help || !cmd) {
    console.log(usage);
    return cmd || values.help ? 0 : 2;
  }
  const int = (v: string | undefined, def: number, what: string): number => {
    const n = v === undefined ? def : Number(v);
    if (!Number.isInteger(n) || n < 0) throw new Error(`${what} must be a non-negative integer`);
    return n;
  };
  switch (cmd) {
    case 'up': {
      const hs = await tb.up({ hosts: int(values.hosts, 3, '--hosts'), disks: int(values.disks, 1, '--disks'), slurm: values.slurm });
      console.log(`${hs.length} hosts up; inventory: ${tb.inventoryPath}`);
      return 0;
    }
    case 'down':
      await tb.down({ purge: values.purge });
      return 0;
    case 'slurm':
      if (rest.length === 0) throw new Error('slurm needs host names (tb1 tb2 ...)');
      await tb.slurm(rest, { quiet: false });
      return 0;
    case 'reboot':
    case 'reset': {
      if (rest.length === 0) throw new Error(`${cmd} needs host names (tb1 ...)`);
      await (cmd === 'reboot' ? tb.reboot : tb.reset)(rest, { quiet: false });
      return 0;
    }
    case 'status': {
      let hs: tb.TestbedHost[];
      try {
        hs = tb.hosts();
      } catch {
        console.log('no bed is up');
        return 1;
      }
      for (const h of hs) {
        const disks = h.disks.map((d) => `${d.dev}(${d.rotational ? 'hdd' : 'ssd'},${d.serial})`).join(' ');
        console.log(`${h.name}\t${h.ip}\t${tb.isRunning(h.name) ? 'running' : 'STOPPED'}\t${disks}`);
      }
      console.log(`inventory: ${tb.inventoryPath}\nssh: ssh -F ${tb.sshConfigPath} tb1`);
      return 0;
    }
    case 'exec': {
      const [name, ...words] = rest;
      if (!name || words.length === 0) throw new Error("exec needs a host and a command: exec tb1 'hostname'");
      const r = await tb.hostExec(name, words.join(' '));
      process.stdout.write(r.stdout);
      process.stderr.write(r.stderr);
      return r.code;
    }
    default:
      console.error(usage);
      return 2;
  }
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err: unknown) => {
    console.error(err instanceof Error ? err.message : String(err));
    process.exit(1);
  },
);
