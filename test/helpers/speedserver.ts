/**
 * Script of a stand-in for the builtin speed test's server (Cloudflare's speed endpoints), to run
 * with `lan.node(ns, speedServerScript, [port])`: GET /__down?bytes=N streams N bytes, POST /__up
 * consumes the body. It prints `listening`, then one line per request (`down <N>` / `up <bytes>`),
 * so tests can count requests.
 */
import { spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { createInterface } from 'node:readline';

export const speedServerScript = `
  const http = require('node:http');
  const block = Buffer.alloc(64 * 1024, 0x61);
  http.createServer((req, res) => {
    const url = new URL(req.url, 'http://x');
    if (req.method === 'GET' && url.pathname === '/__down') {
      const total = Math.max(0, Math.min(Number(url.searchParams.get('bytes')) || 0, 1e9));
      console.log('down ' + total);
      res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': total });
      let left = total;
      const pump = () => {
        while (left > 0) {
          const piece = left >= block.length ? block : block.subarray(0, left);
          left -= piece.length;
          if (!res.write(piece)) { res.once('drain', pump); return; }
        }
        res.end();
      };
      pump();
      return;
    }
    if (req.method === 'POST' && url.pathname === '/__up') {
      let size = 0;
      req.on('data', (chunk) => { size += chunk.length; });
      req.on('end', () => { console.log('up ' + size); res.end('ok'); });
      return;
    }
    res.statusCode = 404;
    res.end();
  }).listen(Number(process.argv[1]), '0.0.0.0', () => console.log('listening'));
`;

/** The stand-in running on 127.0.0.1 (no test LAN), with the lines it printed so far. */
export interface LoopbackSpeedServer {
  readonly url: string;
  readonly lines: string[];
  stop(): void;
}

/** Starts the stand-in on a free port of 127.0.0.1 and waits until it listens. */
export async function startLoopbackSpeedServer(): Promise<LoopbackSpeedServer> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const address = probe.address();
  const port = typeof address === 'object' && address !== null ? address.port : 0;
  await new Promise((resolve) => probe.close(resolve));
  const child = spawn(
    process.execPath,
    ['-e', speedServerScript.replace("'0.0.0.0'", "'127.0.0.1'"), String(port)],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  const lines: string[] = [];
  await new Promise<void>((resolve, reject) => {
    createInterface({ input: child.stdout }).on('line', (line) => {
      lines.push(line);
      if (line === 'listening') resolve();
    });
    child.once('exit', (code) => {
      reject(new Error(`the speed stand-in exited with ${code}`));
    });
  });
  return { url: `http://127.0.0.1:${port}`, lines, stop: () => child.kill() };
}
