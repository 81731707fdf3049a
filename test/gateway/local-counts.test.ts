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

  it('count in the store a key new here, and each hit past half of the limit, deciding on the shared count', async () => {
    const { store, sent } = recordingStore();
    const first = createLocalCounts(store, 60_000, logger);
    const second = createLocalCounts(store, 60_000, logger);
    // A key new here goes to the store, then is counted here below half of 10.
    for (let i = 0; i < 5; i += 1) await first.hit('k', 5000, 10);
    expect(sent).toEqual(['hit k 1']);
    // The other gateway starts from the store's count too: 2, then 3 to 5 here.
    for (let i = 0; i < 4; i += 1) await second.hit('k', 5000, 10);
    expect(sent).toEqual(['hit k 1', 'hit k 1']);
    // Past half: each hit in the store, with this gateway's unsent hits on top.
    expect((await second.hit('k', 5000, 10)).count).toBe(6);
    await first.flush();
    // The first has shared its four unsent: its hit makes the store's 8; the second's three unsent it cannot see yet.
    expect((await first.hit('k', 5000, 10)).count).toBe(8);
    await second.flush();
    // Every hit is in the store now: 11, and this one the 12th.
    expect((await second.hit('k', 5000, 10)).count).toBe(12);
  });

  it('do not let a gateway that has not seen a key admit half a limit the others have spent', async () => {
    const { store } = recordingStore();
    const spent = createLocalCounts(store, 60_000, logger);
    const idle = createLocalCounts(store, 60_000, logger);
    for (let i = 0; i < 10; i += 1) await spent.hit('k', 5000, 10);
    await spent.flush();
    expect((await idle.hit('k', 5000, 10)).count).toBe(11);
  });

  it("count in the store again a key whose count here has not taken in the store's for two intervals", async () => {
    const { store, sent } = recordingStore();
    const counts = createLocalCounts(store, 20, logger);
    await counts.hit('k', 5000, 100);
    await counts.hit('k', 5000, 100);
    expect(sent).toEqual(['hit k 1']);
    await counts.flush();
    await new Promise((resolve) => setTimeout(resolve, 60));
    await counts.hit('k', 5000, 100);
    expect(sent).toEqual(['hit k 1', 'hit k 1', 'hit k 1']);
    await counts.close();
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
