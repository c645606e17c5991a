// node: timers in order, the event-loop phases (nextTick, promises,
// immediates), child processes (execFile, spawn with pipes, exit codes
// and signals), fs (promises and streams), crypto, and a Unix-socket
// server. Prints only results that do not depend on timing.
'use strict';
const { execFile, spawn, execFileSync } = require('child_process');
const fs = require('fs');
const fsp = require('fs/promises');
const path = require('path');
const os = require('os');
const crypto = require('crypto');
const net = require('net');
const { promisify } = require('util');

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function timers() {
  const order = [];
  await new Promise((done) => {
    setImmediate(() => {
      order.push('immediate');
      done();
    });
    process.nextTick(() => order.push('nextTick'));
    Promise.resolve().then(() => order.push('promise'));
  });
  // Registered out of order, 100 ms apart. Node takes each timer's start
  // from a fresh clock reading, so a stall between two registrations on
  // a loaded host shifts that timer's deadline: the order expected is the
  // one the measured deadlines give, and only the verdict is printed.
  const fired = [];
  const deadlines = [];
  await new Promise((done) => {
    for (const ms of [300, 100, 200]) {
      const name = `t${ms}`;
      deadlines.push([performance.now() + ms, name]);
      setTimeout(() => fired.push(name), ms);
    }
    setTimeout(done, 400);
  });
  const byDeadline = deadlines.sort((a, b) => a[0] - b[0]).map((d) => d[1]);
  const inOrder = fired.join(' ') === byDeadline.join(' ');
  console.log('timers:', order.join(' '), '| timeouts fired in deadline order:', inOrder || fired.join(' '));
  let ticks = 0;
  await new Promise((done) => {
    const iv = setInterval(() => {
      if (++ticks === 5) {
        clearInterval(iv);
        done();
      }
    }, 5);
  });
  console.log('interval ticks:', ticks);
  const cancelled = setTimeout(() => console.log('never'), 10);
  clearTimeout(cancelled);
  await sleep(20);
}

async function children() {
  const { stdout } = await promisify(execFile)('sh', ['-c', 'echo from sh; echo $0', 'arg0']);
  console.log('execFile:', JSON.stringify(stdout));
  const sorted = await new Promise((resolve, reject) => {
    const p = spawn('sort', ['-n']);
    let out = '';
    p.stdout.on('data', (d) => (out += d));
    p.on('error', reject);
    p.on('close', (code) => resolve([out.trim().split('\n').join(','), code]));
    p.stdin.end('10\n2\n33\n4\n');
  });
  console.log('spawn sort:', sorted);
  const code = await new Promise((r) => spawn('sh', ['-c', 'exit 5']).on('exit', (c) => r(c)));
  console.log('exit code:', code);
  const sig = await new Promise((r) => {
    const p = spawn('sleep', ['30']);
    p.on('exit', (c, s) => r(s));
    setTimeout(() => p.kill('SIGTERM'), 20);
  });
  console.log('killed by:', sig);
  console.log('execFileSync:', execFileSync('seq', ['3']).toString().split('\n').join(' '));
  const child = spawn(process.execPath, ['-e', 'process.stdin.on("data", d => process.stdout.write(d.toString().toUpperCase()))']);
  let got = '';
  child.stdout.on('data', (d) => (got += d));
  child.stdin.end('node child\n');
  await new Promise((r) => child.on('close', r));
  console.log('node child:', got.trim());
}

async function files(dir) {
  const f = path.join(dir, 'a.txt');
  await fsp.writeFile(f, 'line\n'.repeat(1000));
  await fsp.appendFile(f, 'end\n');
  const st = await fsp.stat(f);
  console.log('size:', st.size, 'isFile:', st.isFile());
  const text = await fsp.readFile(f, 'utf8');
  console.log('lines:', text.split('\n').length - 1);
  await fsp.mkdir(path.join(dir, 'sub/deeper'), { recursive: true });
  for (const n of ['c', 'a', 'b']) await fsp.writeFile(path.join(dir, 'sub', n), n);
  console.log('readdir:', (await fsp.readdir(path.join(dir, 'sub'))).sort().join(','));
  await fsp.rename(path.join(dir, 'sub/a'), path.join(dir, 'sub/deeper/a'));
  console.log('after rename:', (await fsp.readdir(path.join(dir, 'sub/deeper'))).join(','));
  const hash = crypto.createHash('sha256');
  await new Promise((r) => fs.createReadStream(f).on('data', (d) => hash.update(d)).on('end', r));
  console.log('stream sha256:', hash.digest('hex').slice(0, 16));
  const out = fs.createWriteStream(path.join(dir, 'w.txt'));
  for (let i = 0; i < 100; i++) out.write(`${i}\n`);
  await new Promise((r) => out.end(r));
  console.log('write stream:', fs.readFileSync(path.join(dir, 'w.txt'), 'utf8').length);
  try {
    await fsp.readFile(path.join(dir, 'missing'));
  } catch (e) {
    console.log('missing file:', e.code);
  }
  await fsp.rm(path.join(dir, 'sub'), { recursive: true });
  console.log('after rm:', (await fsp.readdir(dir)).sort().join(','));
}

async function server(dir) {
  const sock = path.join(dir, 's.sock');
  const srv = net.createServer((c) => c.on('data', (d) => c.write(d.toString().split('').reverse().join(''))));
  await new Promise((r) => srv.listen(sock, r));
  const replies = [];
  for (const word of ['kiln', 'node', 'unix']) {
    replies.push(
      await new Promise((r) => {
        const c = net.connect(sock, () => c.write(word));
        c.on('data', (d) => {
          r(d.toString());
          c.end();
        });
      }),
    );
  }
  await new Promise((r) => srv.close(r));
  console.log('unix server:', replies.join(' '));
}

async function main() {
  await timers();
  await children();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'node-'));
  await files(dir);
  await server(dir);
  fs.rmSync(dir, { recursive: true });
  console.log('hmac:', crypto.createHmac('sha256', 'k').update('data').digest('base64'));
  console.log('json:', JSON.stringify(JSON.parse('{"b":[1,2,{"c":null}],"a":"x"}')));
}

main().catch((e) => {
  console.log('error:', e);
  process.exit(1);
});
