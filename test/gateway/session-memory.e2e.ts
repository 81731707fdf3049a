import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { start as startGateway } from '../../gateway/src/index.js';
import type { EventBus } from '../../platform/messaging/event-bus.js';
import type { HttpService } from '../../platform/http/server.js';
import { createLogger } from '../../platform/runtime/logger.js';
import { configFor } from '../../platform/runtime/config-slices.js';
import { subgraphUrlsOf } from '../../scripts/stack.js';
import { startTestStack, type TestStack } from '../support/harness.js';

/** A bus that is connected but whose announcements have not arrived yet: what a gateway in another process sees for a moment after a logout. */
const lateBus: EventBus = {
  publish: async () => {},
  subscribe: () => () => {},
  continuity: () => 0,
  ready: async () => {},
  position: () => null,
  read: async () => null,
  close: async () => {},
};

describe('a gateway that has not yet heard a logout announced', () => {
  let stack: TestStack;
  let gateway: HttpService;

  beforeAll(async () => {
    stack = await startTestStack({});
    gateway = await startGateway({
      config: configFor('gateway', { ...stack.config, subgraphUrls: subgraphUrlsOf(stack.subgraphs) }),
      logger: createLogger('silent'),
      bus: lateBus,
      port: 0,
    });
  });
  afterAll(async () => {
    // eslint-disable-next-line @typescript-eslint/no-unnecessary-condition -- beforeAll may have failed before assigning it.
    await gateway?.close();
    // eslint-disable-next-line @typescript-eslint/no-unnecessary-condition -- beforeAll may have failed before assigning it.
    await stack?.stop();
  });

  const post = async (query: string, token: string) => {
    const response = await fetch(`${gateway.url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', token },
      body: JSON.stringify({ query }),
    });
    return {
      status: response.status,
      body: (await response.json()) as { data?: unknown; errors?: Array<{ extensions?: { code?: string } }> },
    };
  };

  it('refuses the token of a logout it served at once, though it held the session as live', async () => {
    const token = await stack.loginDemo();
    expect((await post('{ me { SvcUserId } }', token)).status).toBe(200);
    expect((await post('{ me { SvcUserId } }', token)).status).toBe(200);
    const logout = await post('mutation { logout }', token);
    expect(logout.body).toEqual({ data: { logout: true } });
    const after = await post('{ me { SvcUserId } }', token);
    expect(after.status).toBe(401);
    expect(after.body.errors?.[0]?.extensions?.code).toBe('UNAUTHENTICATED');
  });
});
