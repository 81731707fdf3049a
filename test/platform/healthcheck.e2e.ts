import { spawn } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../../platform/runtime/config.js';

/** The image's HEALTHCHECK command, as Docker runs it, against a service that answers `status` on /ready. */
describe("the image's health check", () => {
  let server: Server;
  let status = 200;
  let port = 0;
  beforeAll(async () => {
    server = createServer((req, res) => res.writeHead(req.url === '/ready' ? status : 404).end());
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(async () => {
    await new Promise((resolve) => server.close(resolve));
  });

  // Asynchronous: the server answering the check runs in this process.
  const check = (env: Record<string, string>) =>
    new Promise<number | null>((resolve) => {
      const child = spawn(process.execPath, ['--import', 'tsx', 'scripts/healthcheck.ts', 'ready'], {
        cwd: REPO_ROOT,
        env: { ...process.env, NODE_ENV: 'test', ...env },
        stdio: 'ignore',
      });
      child.once('exit', (code) => resolve(code));
    });

  it('exits 0 while the service SERVICE names is ready, and 1 when it is not or does not exist', async () => {
    status = 200;
    expect(await check({ SERVICE: 'gateway', GATEWAY_PORT: String(port) })).toBe(0);
    expect(await check({ SERVICE: 'payments', PAYMENTS_SUBGRAPH_PORT: String(port) })).toBe(0);
    status = 503;
    expect(await check({ SERVICE: 'rest-adapter', REST_PORT: String(port) })).toBe(1);
    expect(await check({ SERVICE: 'ledger' })).toBe(1);
  }, 60_000);
});
