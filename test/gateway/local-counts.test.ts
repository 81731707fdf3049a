import { describe, expect, it, vi } from 'vitest';
import { createLocalCounts } from '../../gateway/src/local-counts.js';
import { createHitCounter, type HitCounter } from '../../gateway/src/rate-limits.js';
import { createLogger } from '../../platform/runtime/logger.js';

const logger = createLogger('silent');

/** A shared store in this process that records each command sent to it. */
function recordingStore(): { store: HitCounter; sent: string[] } {
  const inner = createHitCounter(undefined, '', logger);
  const sent: string[] = [];
  return {
    sent,
    store: {
      ...inner,
      hitBy: (key, n, windowMs) => {
        sent.push(`hit ${key} ${n}`);
        return inner.hitBy(key, n, windowMs);
      },
      refund: (key, windowMs, n) => {
        sent.push(`refund ${key} ${n ?? 1}`);
        return inner.refund(key, windowMs, n);
      },
    },
  };
}

describe("a gateway's early counts", () => {
  it('count at once, and send each key its hits together when sharing', async () => {
    const { store, sent } = recordingStore();
    const counts = createLocalCounts(store, 60_000, logger);
    expect(await counts.hitEach(['a', 'b', 'a'], 5000)).toMatchObject([{ count: 1 }, { count: 1 }, { count: 2 }]);
    expect((await counts.hit('a', 5000)).count).toBe(3);
    expect(sent).toEqual([]);
    await counts.flush();
    expect(sent).toEqual(['hit a 3', 'hit b 1']);
    // Nothing new, nothing sent.
    await counts.flush();
    expect(sent).toHaveLength(2);
  });

  it("bring the other gateways' hits into the count when sharing", async () => {
    const { store } = recordingStore();
    const first = createLocalCounts(store, 60_000, logger);
    const second = createLocalCounts(store, 60_000, logger);
    await first.hitBy('k', 5, 5000);
    await second.hit('k', 5000);
    await first.flush();
    await second.flush();
    expect((await second.hit('k', 5000)).count).toBe(7);
    // The first learns of the second's hit when it shares next.
    expect((await first.hit('k', 5000)).count).toBe(6);
    await first.flush();
    expect((await first.hit('k', 5000)).count).toBe(8);
  });

  it('count in the store as each hit comes once past half of the limit, deciding on the shared count', async () => {
    const { store, sent } = recordingStore();
    const first = createLocalCounts(store, 60_000, logger);
    const second = createLocalCounts(store, 60_000, logger);
    // Half of 10 counted here, unsent.
    for (let i = 0; i < 5; i += 1) await first.hit('k', 5000, 10);
    expect(sent).toEqual([]);
    // The other gateway's hits past half go to the store at once...
    for (let i = 0; i < 5; i += 1) await second.hit('k', 5000, 10);
    expect((await second.hit('k', 5000, 10)).count).toBe(6);
    expect(sent).toEqual(['hit k 1']);
    // ...and past half, each gateway decides on the store's count with its own unsent hits: the
    // first, having shared its five, sees all but the second's five not yet sent (the interval's allowance).
    await first.flush();
    expect((await first.hit('k', 5000, 10)).count).toBe(7);
    expect((await second.hit('k', 5000, 10)).count).toBe(13);
    await second.flush();
    expect(sent).toEqual(['hit k 1', 'hit k 5', 'hit k 1', 'hit k 1', 'hit k 5']);
  });

  it('take a refunded hit off at once, and send the difference', async () => {
    const { store, sent } = recordingStore();
    const counts = createLocalCounts(store, 60_000, logger);
    await counts.hitBy('k', 2, 5000);
    await counts.flush();
    await counts.refund('k', 5000);
    expect((await counts.hit('k', 5000)).count).toBe(2);
    await counts.refund('k', 5000);
    await counts.refund('k', 5000);
    await counts.flush();
    // Two, less one, one more, less two: two less than was sent.
    expect(sent).toEqual(['hit k 2', 'refund k 2']);
  });

  it('share by themselves after the interval', async () => {
    const { store, sent } = recordingStore();
    const counts = createLocalCounts(store, 20, logger);
    await counts.hit('k', 5000);
    await vi.waitFor(() => expect(sent).toEqual(['hit k 1']), { timeout: 2000, interval: 10 });
    await counts.close();
  });

  it('start again when a window ends', async () => {
    const { store } = recordingStore();
    const counts = createLocalCounts(store, 60_000, logger);
    await counts.hitBy('k', 3, 1000);
    await new Promise((resolve) => setTimeout(resolve, 1050));
    expect((await counts.hit('k', 1000)).count).toBe(1);
  });

  it('go on counting, and warn, while the store does not answer', async () => {
    const warnings: string[] = [];
    const down: HitCounter = {
      hit: () => Promise.reject(new Error('down')),
      hitBy: () => Promise.reject(new Error('down')),
      hitEach: () => Promise.reject(new Error('down')),
      refund: () => Promise.reject(new Error('down')),
      close: () => Promise.resolve(),
    };
    const counts = createLocalCounts(down, 60_000, { ...logger, warn: (message: string) => warnings.push(message) });
    await counts.hitBy('k', 2, 5000);
    await counts.flush();
    expect((await counts.hit('k', 5000)).count).toBe(3);
    expect(warnings).toEqual(['rate-limit counts not shared']);
  });
});
