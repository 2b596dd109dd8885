// The floor: what connecting costs, and nothing else. Same SSH library as racksmith (node-ssh over
// ssh2, own TCP socket with setNoDelay, key auth, host key checked against known_hosts), same
// concurrency; one exec of `true` per host, then close. Plain JavaScript (no tsx), so it is the
// cost of Node + node-ssh + the handshakes.
//
//   node bench/floor.mjs HOSTS_JSON KEY KNOWN_HOSTS CONCURRENCY [COMMAND [HANDSHAKES]]
//     HOSTS_JSON: [{"name":"tb1","ip":"10.78.0.11","port":22,"user":"root"}, ...]
//     COMMAND: what the one exec runs (default `true`; the bench's --become floor: `sudo -n true`)
//     HANDSHAKES: at most this many handshakes at once, each host's timeout from its turn, as
//       racksmith's --ssh-handshakes (src/connection/handshake-gate.ts; default: no limit)
// Prints one JSON line: {"hosts":N,"ok":N,"connectMs":[...],"execMs":[...]}; exit 1 if a host failed.
import net from 'node:net';
import { readFileSync } from 'node:fs';
import { NodeSSH } from 'node-ssh';

const [hostsFile, keyFile, knownHostsFile, concurrency, command = 'true', handshakes] = process.argv.slice(2);
const hosts = JSON.parse(readFileSync(hostsFile, 'utf8'));
const privateKey = readFileSync(keyFile, 'utf8');
const known = new Map();
for (const line of readFileSync(knownHostsFile, 'utf8').split('\n')) {
  const [names, , key] = line.trim().split(/\s+/);
  if (!names || !key) continue;
  for (const n of names.split(',')) known.set(n, key);
}

function tcp(ip, port) {
  return new Promise((res, rej) => {
    const s = net.connect({ host: ip, port });
    s.once('connect', () => {
      s.setNoDelay(true);
      res(s);
    });
    s.once('error', rej);
  });
}

// the handshake turns, first come first served
const turns = { free: Number(handshakes) || Infinity, waiting: [] };
async function turn() {
  if (turns.free > 0) turns.free--;
  else await new Promise((resolve) => turns.waiting.push(resolve));
}
function endTurn() {
  const next = turns.waiting.shift();
  if (next) next();
  else turns.free++;
}

/** TCP, key exchange, host key check and authentication: what a turn covers. */
async function connect(h, ssh) {
  const sock = await tcp(h.ip, h.port);
  await ssh.connect({
    sock,
    host: h.ip,
    port: h.port,
    username: h.user,
    privateKey,
    readyTimeout: 10_000,
    hostVerifier: (key) => known.get(h.ip) === key.toString('base64'),
  });
}

async function one(h) {
  await turn();
  const t0 = performance.now();
  const ssh = new NodeSSH();
  try {
    await connect(h, ssh);
  } finally {
    endTurn();
  }
  const t1 = performance.now();
  const r = await ssh.execCommand(command);
  const t2 = performance.now();
  ssh.dispose();
  if (r.code !== 0) throw new Error(`${h.name}: ${command} exited ${r.code}: ${r.stderr.trim()}`);
  return { connectMs: t1 - t0, execMs: t2 - t1 };
}

const results = new Array(hosts.length);
let next = 0;
let failed = 0;
async function worker() {
  while (next < hosts.length) {
    const i = next++;
    try {
      results[i] = await one(hosts[i]);
    } catch (e) {
      failed++;
      process.stderr.write(`${hosts[i].name}: ${e.message}\n`);
    }
  }
}
await Promise.all(Array.from({ length: Math.max(1, Math.min(Number(concurrency) || hosts.length, hosts.length)) }, worker));
const ok = results.filter(Boolean);
process.stdout.write(
  JSON.stringify({
    hosts: hosts.length,
    ok: ok.length,
    connectMs: ok.map((r) => Math.round(r.connectMs)),
    execMs: ok.map((r) => Math.round(r.execMs * 10) / 10),
  }) + '\n',
);
process.exitCode = failed ? 1 : 0;
