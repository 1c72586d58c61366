/**
 * A real MQTT broker for tests: Debian's `mosquitto`, started on a free loopback port with a
 * throw-away configuration (`listener <port> 127.0.0.1`, anonymous access, no persistence) and
 * killed afterwards. `mosquittoMissing()` says why it cannot run; under CI (CI=true) a test must
 * fail with that reason instead of skipping (`requireMosquitto`).
 *
 * `collector(broker, topics)` subscribes an mqtt.js client and keeps every message (with its
 * retain flag), for assertions on what netkeep published.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, connect as tcpConnect, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connectAsync, type MqttClient } from 'mqtt';
import { eventually } from './processes.js';

const binary = '/usr/sbin/mosquitto';

/** Why no broker can be started here, or undefined. */
export function mosquittoMissing(): string | undefined {
  return existsSync(binary) ? undefined : `${binary} not found: install the Debian package 'mosquitto'`;
}

/** For `describe(..., { skip })`: the reason to skip, except under CI where missing is a failure. */
export function mosquittoSkip(): string | false {
  const missing = mosquittoMissing();
  if (missing === undefined || process.env.CI === 'true') return false;
  console.log(`# MQTT tests skipped: ${missing}`);
  return missing;
}

export interface Broker {
  readonly port: number;
  readonly url: string;
  readonly process: ChildProcess;
  readonly log: string[];
  stop(): Promise<void>;
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) =>
    server.close(() => {
      resolve();
    }),
  );
  return port;
}

function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = tcpConnect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => {
      resolve(false);
    });
  });
}

/** Starts mosquitto (throws naming the package when it is not installed). */
export async function startMosquitto(port?: number): Promise<Broker> {
  const missing = mosquittoMissing();
  if (missing !== undefined) throw new Error(missing);
  const chosen = port ?? (await freePort());
  const dir = mkdtempSync(join(tmpdir(), 'netkeep-mosquitto-'));
  const conf = join(dir, 'mosquitto.conf');
  writeFileSync(
    conf,
    [`listener ${chosen} 127.0.0.1`, 'allow_anonymous true', 'persistence false', 'log_dest stderr', ''].join(
      '\n',
    ),
  );
  const child = spawn(binary, ['-c', conf], { stdio: ['ignore', 'pipe', 'pipe'] });
  const log: string[] = [];
  child.stdout.on('data', (chunk: Buffer) => log.push(chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => log.push(chunk.toString()));
  let up = false;
  for (let i = 0; i < 200 && !up && child.exitCode === null; i++) {
    up = await accepts(chosen);
    if (!up) await new Promise((resolve) => setTimeout(resolve, 25));
  }
  if (!up) {
    child.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
    throw new Error(`mosquitto did not start on port ${chosen}:\n${log.join('')}`);
  }
  return {
    port: chosen,
    url: `mqtt://127.0.0.1:${chosen}`,
    process: child,
    log,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) {
        const exited = new Promise((resolve) => child.once('exit', resolve));
        child.kill('SIGKILL');
        await exited;
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

export interface MqttMessage {
  readonly topic: string;
  readonly payload: string;
  readonly retain: boolean;
}

export interface Collector {
  readonly client: MqttClient;
  readonly messages: MqttMessage[];
  /** Messages on `topic`. */
  on(topic: string): MqttMessage[];
  /** Waits (bounded) until `check` holds. */
  waitUntil(check: (messages: MqttMessage[]) => boolean, what: string): Promise<void>;
  close(): Promise<void>;
}

/** A subscribed test client that keeps every message it receives. */
export async function collector(broker: Broker, topics: string[]): Promise<Collector> {
  const client = await connectAsync(broker.url, { reconnectPeriod: 0 });
  const messages: MqttMessage[] = [];
  client.on('message', (topic, payload, packet) => {
    messages.push({ topic, payload: payload.toString(), retain: packet.retain });
  });
  await client.subscribeAsync(topics, { qos: 1 });
  return {
    client,
    messages,
    on: (topic) => messages.filter((m) => m.topic === topic),
    async waitUntil(check, what) {
      if (!(await eventually(() => check(messages), 400, 50)))
        throw new Error(`MQTT: ${what} never happened; got ${messages.map((m) => m.topic).join(', ')}`);
    },
    async close() {
      await client.endAsync(true);
    },
  };
}
