import type { Db } from 'mongodb';
import { describe, expect, it } from 'vitest';
import type { GraphClient } from '../../platform/contracts/graph.js';
import { createLogger } from '../../platform/runtime/logger.js';
import { Outbox } from '../../platform/messaging/outbox.js';
import { achForwarder } from '../../subgraphs/payments/src/ach/ach-ledger.js';

describe('the outbox engine', () => {
  it('logs a sweep the database cuts short instead of rejecting, and runs one more pass for the nudges that came during it', async () => {
    const lines: Array<Record<string, unknown>> = [];
    const logger = createLogger('warn', {}, (line) => lines.push(JSON.parse(line) as Record<string, unknown>));
    const closed = new Error('Operation interrupted because client was closed');
    let finds = 0;
    let open!: () => void;
    const gate = new Promise<void>((resolve) => {
      open = resolve;
    });
    const cursor = {
      sort: () => ({
        limit: () => ({
          toArray: async () => {
            finds += 1;
            await gate;
            throw closed;
          },
        }),
      }),
    };
    const db = {
      databaseName: 'unit_outbox',
      collection: () => ({ find: () => cursor, deleteMany: () => Promise.resolve({ deletedCount: 0 }) }),
    } as unknown as Db;
    const graph: GraphClient = { request: () => Promise.reject(new Error('not reached')) };
    const outbox = new Outbox(db, [achForwarder(graph)], logger, { everyMs: 60_000 }).start();
    outbox.nudge();
    outbox.nudge();
    open();
    await outbox.idle();
    await outbox.stop();
    expect(finds).toBe(2);
    expect(lines.map((line) => [line.msg, line.error])).toEqual([
      ['ACH forwarding sweep failed', closed.message],
      ['ACH forwarding sweep failed', closed.message],
    ]);
  });
});
