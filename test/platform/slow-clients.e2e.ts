import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { metricsExposition } from '../../platform/telemetry/metrics.js';
import { startTestStack, type TestStack } from '../support/harness.js';

const BODY_IDLE_MS = 1000;
const HEADERS_MS = 1500;
const PER_ADDRESS = 5;

/** A raw connection to the gateway from `localAddress`, resolved once connected. */
function connect(port: number, localAddress = '127.0.0.1'): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host: '127.0.0.1', port, localAddress }, () => resolve(socket));
    socket.once('error', reject);
  });
}

/** Milliseconds until the server closes `socket`, while `drip` writes to it every `everyMs`; at most `capMs`. */
function closedAfter(socket: net.Socket, drip: () => string, everyMs: number, capMs: number): Promise<number> {
  const started = performance.now();
  return new Promise((resolve) => {
    const timer = setInterval(() => {
      if (!socket.destroyed) socket.write(drip());
    }, everyMs);
    const done = () => {
      clearInterval(timer);
      resolve(performance.now() - started);
    };
    socket.once('close', done);
    socket.on('error', () => {});
    setTimeout(() => {
      socket.destroy();
      done();
    }, capMs);
  });
}

/** A counter's value in the process's metrics, 0 when it has none. */
async function refusals(reason: string): Promise<number> {
  const { text } = await metricsExposition();
  const line = text
    .split('\n')
    .find(
      (l) => l.startsWith('http_server_connections_refused_total{') && l.includes('service="gateway"') && l.includes(`reason="${reason}"`),
    );
  return line ? Number(line.split(' ').at(-1)) : 0;
}

describe('slow and numerous clients', () => {
  let stack: TestStack;
  let port: number;

  beforeAll(async () => {
    stack = await startTestStack({
      HTTP_BODY_IDLE_TIMEOUT_MS: String(BODY_IDLE_MS),
      HTTP_BODY_MIN_BYTES_PER_SECOND: '1024',
      HTTP_HEADERS_TIMEOUT_MS: String(HEADERS_MS),
      HTTP_MAX_CONNECTIONS_PER_ADDRESS: String(PER_ADDRESS),
    });
    port = stack.gateway.port;
  });
  afterAll(async () => {
    await stack.stop();
  });

  const headers = (length: number) =>
    `POST /graphql HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\ncontent-length: ${length}\r\n\r\n`;

  it('drops a client that sends its headers and then stalls its body, within the idle timeout', async () => {
    const before = await refusals('slow_body');
    const socket = await connect(port);
    socket.write(`${headers(1000)}{"query":`);
    const ms = await closedAfter(socket, () => '', 60_000, 10_000);
    expect(ms).toBeGreaterThanOrEqual(BODY_IDLE_MS - 50);
    // The idle timeout, plus one check of the watch (a quarter of it), plus scheduling.
    expect(ms).toBeLessThan(BODY_IDLE_MS * 1.25 + 750);
    expect(await refusals('slow_body')).toBe(before + 1);
  });

  it('drops a client that trickles its body below the minimum rate, though it never stalls', async () => {
    const socket = await connect(port);
    socket.write(headers(100_000));
    // A byte every 200 ms: never idle for the idle timeout, far below 1 KiB a second.
    const ms = await closedAfter(socket, () => ' ', 200, 10_000);
    expect(ms).toBeLessThan(BODY_IDLE_MS * 1.25 + 750);
  });

  it('drops a client that trickles its headers, within the header timeout', async () => {
    const socket = await connect(port);
    socket.write('POST /graphql HTTP/1.1\r\nhost: 127.0.0.1\r\n');
    let n = 0;
    const ms = await closedAfter(socket, () => `x-slow-${n++}: 1\r\n`, 200, 15_000);
    // Node checks its header timeout once a second.
    expect(ms).toBeGreaterThanOrEqual(HEADERS_MS - 50);
    expect(ms).toBeLessThan(HEADERS_MS + 1000 + 750);
  });

  it('still serves a body sent at an ordinary pace', async () => {
    const answer = await stack.graphql<{ __typename: string }>('{ __typename }');
    expect(answer.body.data?.__typename).toBe('Query');
  });

  it('refuses connections over the cap of one address while another address is served', async () => {
    const before = await refusals('address_cap');
    const held = await Promise.all(Array.from({ length: PER_ADDRESS }, () => connect(port)));
    try {
      // The next one from the same address is closed as it arrives, without an answer.
      const over = await connect(port);
      const answer = await new Promise<string>((resolve) => {
        let text = '';
        over.on('data', (chunk: Buffer) => (text += chunk.toString()));
        over.on('error', () => {});
        over.once('close', () => resolve(text));
        over.write('GET /health HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n');
      });
      expect(answer).toBe('');
      expect(await refusals('address_cap')).toBeGreaterThan(before);
      // Another loopback address is served meanwhile.
      const other = await connect(port, '127.0.0.2');
      const served = await new Promise<string>((resolve) => {
        let text = '';
        other.on('data', (chunk: Buffer) => {
          text += chunk.toString();
          if (text.includes('"status":"ok"')) resolve(text);
        });
        other.write('GET /health HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n');
      });
      expect(served).toMatch(/^HTTP\/1\.1 200/);
      other.destroy();
    } finally {
      for (const socket of held) socket.destroy();
    }
    // Once they close, the address is served again.
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect((await fetch(`${stack.gateway.url}/health`)).status).toBe(200);
  });
});
