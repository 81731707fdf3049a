import type { IncomingHttpHeaders } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { httpJsonRoutes, localJsonRoute, type JsonRoute } from '../../platform/http/json-route.js';
import { startHttpService, type HttpService } from '../../platform/http/server.js';
import { loadConfig } from '../../platform/runtime/config.js';
import { createLogger } from '../../platform/runtime/logger.js';

// One route definition, served over HTTP and offered to a transport: the two must answer alike.
describe('a JSON route, over HTTP and in this process', () => {
  const seen: unknown[] = [];
  const route: JsonRoute = {
    path: '/internal/echo',
    maxBodyBytes: 64,
    tooLarge: { status: 200, body: { echoed: null } },
    admit: (headers: IncomingHttpHeaders) => (headers['x-caller'] === 'trusted' ? null : { status: 401, body: { error: 'not trusted' } }),
    answer: async (body) => {
      seen.push(body);
      return body === null ? { status: 400, body: { error: 'not JSON' } } : { status: 200, body: { echoed: body } };
    },
  };
  const local = localJsonRoute(route, 'route-test');
  let service: HttpService;

  beforeAll(async () => {
    const routes = httpJsonRoutes([route]);
    service = await startHttpService({
      name: 'route-test',
      host: '127.0.0.1',
      port: 0,
      logger: createLogger('silent'),
      ready: async () => true,
      metrics: false,
      limits: loadConfig({ NODE_ENV: 'test' }).httpLimits,
      handle: async (req, res, scope) => {
        if (!(await routes(req, res, scope))) res.writeHead(404).end();
      },
    });
  });
  afterAll(async () => {
    await service.close();
  });

  const both = async (headers: Record<string, string>, text: string) => {
    const response = await fetch(`${service.url}${route.path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: text,
    });
    const overHttp = { status: response.status, body: await response.json() };
    const answer = await local({ 'content-type': 'application/json', ...headers }, text);
    return { overHttp, here: { status: answer.status, body: JSON.parse(answer.text) as unknown } };
  };

  it('answers each case the same way: admitted, refused by its headers, too large, not JSON', async () => {
    const cases: Array<[Record<string, string>, string, number]> = [
      [{ 'x-caller': 'trusted' }, '{"token":"abc"}', 200],
      [{ 'x-caller': 'someone' }, '{"token":"abc"}', 401],
      [{ 'x-caller': 'trusted' }, JSON.stringify({ token: 'x'.repeat(100) }), 200],
      [{ 'x-caller': 'trusted' }, '{not json', 400],
    ];
    for (const [headers, text, status] of cases) {
      const { overHttp, here } = await both(headers, text);
      expect(here).toEqual(overHttp);
      expect(here.status).toBe(status);
    }
    // The refused caller's body was never handed to the route, either way; the one too large neither.
    expect(seen).toEqual([{ token: 'abc' }, { token: 'abc' }, null, null]);
  });

  it('leaves other paths and methods to the next handler', async () => {
    expect((await fetch(`${service.url}/elsewhere`, { method: 'POST', body: '{}' })).status).toBe(404);
    expect((await fetch(`${service.url}${route.path}`)).status).toBe(404);
  });
});
