import { describe, expect, it } from 'vitest';
import type { Db } from 'mongodb';
import { createLogger } from '../../platform/logger.js';
import type { GraphClient } from '../../platform/graph-client.js';
import { AchForwarder } from '../../subgraphs/payments/src/ach.js';

describe('ACH event forwarding', () => {
  it('logs a pass the database cuts short instead of rejecting, so a mutation that starts it in the background leaves no unhandled rejection', async () => {
    const lines: Array<Record<string, unknown>> = [];
    const logger = createLogger('warn', {}, (line) => lines.push(JSON.parse(line) as Record<string, unknown>));
    const closed = new Error('Operation interrupted because client was closed');
    const db = {
      collection: () => ({ find: () => ({ sort: () => ({ limit: () => ({ toArray: () => Promise.reject(closed) }) }) }) }),
    } as unknown as Db;
    const graph = { request: () => Promise.reject(new Error('not reached')) } as unknown as GraphClient;
    const forwarder = new AchForwarder(db, graph, logger);
    const first = forwarder.forward();
    expect(forwarder.forward()).toBe(first);
    await expect(first).resolves.toBeUndefined();
    await forwarder.idle();
    expect(lines.map((line) => [line.msg, line.error])).toEqual([['ach events not forwarded yet', closed.message]]);
  });
});
