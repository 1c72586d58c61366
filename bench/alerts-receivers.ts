/**
 * Child process of the alert benchmark: the receivers on 127.0.0.1. One HTTP server takes the
 * webhook, ntfy and Apprise deliveries (200 at once) and an mqtt.js client counts the messages on
 * `netkeep/event` of the broker at BENCH_MQTT_URL. Prints `{"ready":true,"port":N}`, then one line
 * per HTTP delivery `{"path","bytes","at"}` and one per 100 MQTT events `{"mqttEvents","at"}` (at:
 * Unix ms, the same clock as the server child's).
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { connectAsync } from 'mqtt';

const server = createServer((req, res) => {
  let bytes = 0;
  req.on('data', (chunk: Buffer) => (bytes += chunk.length));
  req.on('end', () => {
    res.writeHead(200).end('ok');
    console.log(JSON.stringify({ path: req.url, bytes, at: Date.now() }));
  });
});
await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
const client = await connectAsync(process.env.BENCH_MQTT_URL ?? '', { reconnectPeriod: 0 });
let events = 0;
client.on('message', () => {
  events++;
  if (events % 100 === 0) console.log(JSON.stringify({ mqttEvents: events, at: Date.now() }));
});
await client.subscribeAsync('netkeep/event', { qos: 1 });
console.log(JSON.stringify({ ready: true, port: (server.address() as AddressInfo).port }));
process.on('SIGTERM', () => {
  void client.endAsync(true).then(() => process.exit(0));
});
