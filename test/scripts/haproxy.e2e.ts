import { spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import http from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../platform/mongo/ferretdb.js';
import { HAPROXY_BIN, haproxyConfig, haproxyServers, spawnHaproxy } from '../../scripts/lib/haproxy.js';
import { ensureDebianPackage } from '../support/debian.js';
import { until } from '../support/harness.js';

// The configuration scripts/lib/haproxy.ts writes, checked by Debian's HAProxy and run in front of
// two small HTTP servers on loopback ports: what it retries, and what it must not.

/** A server that counts the requests it receives; `onPost` decides how it treats a POST. */
async function server(onPost: 'answer' | 'hang up') {
  const received = { count: 0 };
  const instance = http.createServer((request, response) => {
    if (request.url === '/ready') return void response.end('ready');
    received.count += 1;
    if (request.method === 'POST' && onPost === 'hang up') return void request.socket.destroy();
    response.end(String(port));
  });
  const port = await freePort();
  await new Promise<void>((resolve) => instance.listen(port, '127.0.0.1', resolve));
  return { instance, port, received };
}

describe("HAProxy's configuration", () => {
  let dir: string;
  const started: Array<{ close(): void }> = [];
  let haproxy: ChildProcess | undefined;

  beforeAll(async () => {
    await ensureDebianPackage(HAPROXY_BIN, 'haproxy');
  }, 600_000);
  afterEach(async () => {
    haproxy?.kill('SIGKILL');
    haproxy = undefined;
    for (const one of started.splice(0)) one.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  /** HAProxy over `servers`, answering on the returned front once it serves. */
  const balance = async (servers: Array<{ port: number }>) => {
    dir = await mkdtemp(path.join(tmpdir(), 'banking-graph-haproxy-test-'));
    const front = await freePort();
    const statsSocket = path.join(dir, 'haproxy.sock');
    const configFile = path.join(dir, 'haproxy.cfg');
    await writeFile(
      configFile,
      haproxyConfig([{ name: 'web', port: front, servers: servers.map(({ port }, i) => ({ name: `server-${i + 1}`, port })) }], {
        statsSocket,
      }),
    );
    const output: string[] = [];
    haproxy = spawnHaproxy(configFile, (line) => void output.push(line));
    await until(
      () =>
        haproxyServers(statsSocket).then(
          (states) => [...states.values()].map((state) => state.status),
          () => [],
        ),
      (statuses) => statuses.length === servers.length && statuses.every((status) => status === 'UP'),
    ).catch((error: unknown) => {
      throw new Error(`HAProxy did not start: ${(error as Error).message}\n${output.join('\n')}`);
    });
    return { url: `http://127.0.0.1:${front}`, statsSocket };
  };

  it('is valid for HAProxy, retries only connections that failed, and sends those retries to another server', async () => {
    const text = haproxyConfig([{ name: 'web', port: 8080, servers: [{ name: 'a', port: 8081 }] }], { statsSocket: '/tmp/stats.sock' });
    dir = await mkdtemp(path.join(tmpdir(), 'banking-graph-haproxy-test-'));
    await writeFile(path.join(dir, 'haproxy.cfg'), text);
    const check = spawnSync(HAPROXY_BIN, ['-c', '-f', path.join(dir, 'haproxy.cfg')], { encoding: 'utf8' });
    expect(`${check.status} ${check.stdout}${check.stderr}`.trim()).toBe('0 Configuration file is valid');
    expect(text.match(/^\s*retry-on .*$/gm)?.map((line) => line.trim())).toEqual(['retry-on conn-failure']);
    expect(text).toMatch(/^\s*option redispatch 1$/m);
    expect(text).toMatch(/^\s*retries [1-9]$/m);
  });

  it('answers every request, GET and POST, through a server that has just died, from the other one', async () => {
    const [alive, dying] = [await server('answer'), await server('answer')];
    started.push(alive.instance);
    const { url, statsSocket } = await balance([alive, dying]);
    // Closed as a killed process's port is: connections refused, before HAProxy's checks notice.
    dying.instance.close();
    dying.instance.closeAllConnections();
    const answers = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        fetch(`${url}/work`, { method: i % 2 === 0 ? 'GET' : 'POST', body: i % 2 === 0 ? null : 'x' }).then(
          async (response) => `${response.status} ${await response.text()}`,
          (error: unknown) => `failed: ${(error as Error).message}`,
        ),
      ),
    );
    expect(answers).toEqual(answers.map(() => `200 ${alive.port}`));
    const states = await haproxyServers(statsSocket);
    // Round robin sent some to the dead server first; HAProxy sent them on.
    expect(states.get('web/server-2')?.redispatches).toBeGreaterThan(0);
  });

  it('does not send a request again once a server has received it, even if it never answers', async () => {
    const [first, second] = [await server('hang up'), await server('hang up')];
    started.push(first.instance, second.instance);
    const { url } = await balance([first, second]);
    const status = await fetch(`${url}/work`, { method: 'POST', body: 'pay once' }).then((response) => response.status);
    // HAProxy's "bad gateway": the client learns the outcome is unknown, and the payment went out once.
    expect(status).toBe(502);
    expect(first.received.count + second.received.count).toBe(1);
  });
});
