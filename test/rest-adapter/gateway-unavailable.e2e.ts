import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, describe, expect, it } from 'vitest';
import type { HttpService } from '../../platform/http/server.js';
import { loadConfig } from '../../platform/runtime/config.js';
import { createLogger } from '../../platform/runtime/logger.js';
import { configFor } from '../../platform/runtime/config-slices.js';
import { start as startRestAdapter } from '../../rest-adapter/src/index.js';

describe('the REST adapter with no gateway behind its address', () => {
  const lines: Array<Record<string, unknown>> = [];
  let balancer: http.Server | null = null;
  let adapter: HttpService | null = null;
  afterAll(async () => {
    await adapter?.close();
    await new Promise((resolve) => balancer?.close(resolve));
  });

  it("answers a load balancer's HTML 503 as UNAVAILABLE in the route's envelope, with a warning and no error", async () => {
    // What HAProxy answers while no gateway is up.
    balancer = http.createServer((_req, res) =>
      res.writeHead(503, { 'content-type': 'text/html' }).end('<html><body><h1>503 Service Unavailable</h1></body></html>'),
    );
    await new Promise<void>((resolve) => balancer!.listen(0, '127.0.0.1', resolve));
    const { port } = balancer.address() as AddressInfo;
    const config = loadConfig({ NODE_ENV: 'test', GATEWAY_URL: `http://127.0.0.1:${port}/graphql`, REST_PORT: '0' });
    adapter = await startRestAdapter({
      config: configFor('rest-adapter', config),
      logger: createLogger('info', {}, (line) => void lines.push(JSON.parse(line) as Record<string, unknown>)),
    });
    const response = await fetch(`${adapter.url}/restrictions`, { headers: { token: 'a'.repeat(43) } });
    expect(response.status).toBe(503);
    expect(await response.json()).toMatchObject({ success: false, error: { code: 'UNAVAILABLE' } });
    expect(lines.filter((line) => line.level === 'error')).toEqual([]);
    expect(lines.find((line) => line.msg === 'gateway unavailable')).toMatchObject({ level: 'warn', status: 503 });
  });
});
