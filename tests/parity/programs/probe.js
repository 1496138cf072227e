// Node.js parity probe (tests/parity/runtimes.py): libuv's thread pool (fs.promises,
// crypto, zlib), worker_threads, child_process spawn/exec/fork, signal handlers.
const { Worker, isMainThread, parentPort, workerData } = require('worker_threads');
const cp = require('child_process');
const fs = require('fs');
const fsp = require('fs/promises');
const path = require('path');
const crypto = require('crypto');
const zlib = require('zlib');

const mode = process.argv[2] || 'all';
if (!isMainThread) {
  let s = 0;
  for (let i = 0; i < 1e6; i++) s += i % (workerData + 3);
  parentPort.postMessage(s);
} else if (mode === 'child') {
  process.on('message', (m) => { process.send(m * 2); process.exit(0); });
} else if (mode === 'sigint') {
  // Three SIGINTs to a handler, then exit 7.
  let n = 0;
  process.on('SIGINT', () => { n++; console.log('SIGINT', n); if (n === 3) process.exit(7); });
  for (let i = 1; i <= 3; i++) setTimeout(() => process.kill(process.pid, 'SIGINT'), 20 * i);
  setTimeout(() => {}, 10000);
} else if (mode === 'sigterm') {
  // No handler of the program's: node's own one-shot handler restores the terminal and
  // raises SIGTERM again, which ends the process.
  process.kill(process.pid, 'SIGTERM');
  setTimeout(() => {}, 10000);
} else if (mode === 'overflow') {
  let d = 0;
  const f = () => { d++; f(); };
  try { f(); } catch (e) { console.log(e.constructor.name, d > 1000); }
} else if (mode === 'uncaught') {
  throw new Error('uncaught on purpose');
} else if (mode === 'abort') {
  process.abort();
} else {
  main();
}

async function main() {
  const d = 'out';
  await fsp.mkdir(d, { recursive: true });
  const ids = [...Array(100).keys()];
  await Promise.all(ids.map((i) => fsp.writeFile(path.join(d, `f${i}.txt`), `line ${i}\n`.repeat(100))));
  let total = 0;
  for (const b of await Promise.all(ids.map((i) => fsp.readFile(path.join(d, `f${i}.txt`))))) total += b.length;
  console.log('bytes', total);
  const keys = await Promise.all([...Array(16).keys()].map((i) => new Promise((res, rej) =>
    crypto.pbkdf2('pw' + i, 'salt', 2000, 32, 'sha256', (e, k) => (e ? rej(e) : res(k))))));
  console.log('keys', keys.length);
  const gz = await new Promise((res, rej) => zlib.gzip(Buffer.alloc(1 << 20, 7), (e, b) => (e ? rej(e) : res(b))));
  console.log('gzip', zlib.gunzipSync(gz).length);
  const sums = await Promise.all([0, 1, 2, 3].map((k) => new Promise((res, rej) => {
    const w = new Worker(__filename, { workerData: k });
    w.on('message', res);
    w.on('error', rej);
  })));
  console.log('workers', sums.join(','));
  const r = cp.spawnSync('sh', ['-c', 'echo hi; exit 4']);
  console.log('spawnSync', r.status, r.stdout.toString().trim());
  console.log('killed child', cp.spawnSync('sh', ['-c', 'kill -TERM $$']).signal);
  console.log('exec', await new Promise((res) => cp.exec('seq 1 5 | tail -n 1', (e, so) => res(so.trim()))));
  const f = cp.fork(__filename, ['child']);
  const doubled = await new Promise((res) => { f.on('message', res); f.send(21); });
  await new Promise((res) => f.on('exit', res));
  console.log('fork', doubled);
  process.on('SIGUSR2', () => console.log('SIGUSR2 handled'));
  process.kill(process.pid, 'SIGUSR2');
  await new Promise((res) => setTimeout(res, 50));
  fs.watch(d, () => {}).close();
  console.log('done');
}
