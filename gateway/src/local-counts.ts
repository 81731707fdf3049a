import type { Logger } from '../../platform/runtime/logger.js';
import type { Hit, HitCounter } from './rate-limits.js';

/** One key's count as this gateway knows it, and its hits not yet added to the shared store. */
interface LocalCount {
  count: number;
  unsent: number;
  /** When its window ends (`performance.now()` milliseconds). */
  windowEnd: number;
  windowMs: number;
  /** When the store's count last came into `count` (`performance.now()`); never, for a key new here. */
  sharedAt: number;
}

/** At most this many keys are counted here at once; a hit of a new key past it goes to the store directly. */
const MAX_LOCAL_KEYS = 200_000;
/** How often the keys whose window has ended are let go. */
const SWEEP_MS = 1000;

/**
 * Counts hits in this process at once, and adds them to the shared `store` every `flushMs` in one
 * round trip for all keys; each answer brings the other gateways' hits into the count. A hit is
 * counted without waiting for the store only while its key is below half of its limit and this
 * gateway's count of it has taken in the store's within the last two intervals; otherwise (a key
 * new here, one idle here while other gateways counted it, or one past half its limit) it is
 * counted in the store as it comes, and the store's count, with this gateway's hits not yet sent,
 * decides. What the gateways cannot see of each other is what was sent to them within the last two
 * intervals, below half of a limit. At a window's edge, hits sent within `flushMs` of its end count
 * in the store's window that is ending. While the store does not answer, each gateway goes on
 * counting its own (warned once per flush).
 */
export function createLocalCounts(store: HitCounter, flushMs: number, logger: Logger): HitCounter & { flush(): Promise<void> } {
  const counts = new Map<string, LocalCount>();
  /** The keys with hits not yet sent: a round trip looks at these, not at every key counted. */
  const unsentKeys = new Set<string>();
  let sweptAt = performance.now();
  let timer: NodeJS.Timeout | null = null;
  let flushing: Promise<void> = Promise.resolve();
  /** Adds `n` hits (negative: given back) to what `key` has to send, and schedules the round trip. */
  const addUnsent = (key: string, local: LocalCount, n: number) => {
    local.unsent += n;
    unsentKeys.add(key);
    schedule();
  };
  const sendUnsent = async (): Promise<void> => {
    timer = null;
    const now = performance.now();
    // Keys whose window has ended are let go once a sweep interval, whether or not they had hits to send.
    if (now - sweptAt >= SWEEP_MS) {
      sweptAt = now;
      for (const [key, local] of counts) if (local.windowEnd <= now) counts.delete(key);
    }
    const sent: Array<{ key: string; local: LocalCount; n: number }> = [];
    for (const key of unsentKeys) {
      const local = counts.get(key);
      if (!local) continue;
      if (local.windowEnd <= now) counts.delete(key);
      else if (local.unsent !== 0) {
        sent.push({ key, local, n: local.unsent });
        local.unsent = 0;
      }
    }
    unsentKeys.clear();
    if (sent.length === 0) return;
    const answers = await Promise.allSettled(
      sent.map(({ key, local, n }) => (n > 0 ? store.hitBy(key, n, local.windowMs) : store.refund(key, local.windowMs, -n))),
    );
    let failed = 0;
    answers.forEach((answer, i) => {
      const { key, local, n } = sent[i]!;
      if (answer.status === 'rejected') {
        // Kept for the next round trip.
        failed += 1;
        addUnsent(key, local, n);
      }
      // The store's count has every gateway's hits sent so far; this gateway's since the round trip began come on top.
      else if (answer.value !== undefined && counts.get(key) === local) {
        local.count = answer.value.count + local.unsent;
        local.sharedAt = performance.now();
        local.windowEnd = local.sharedAt + answer.value.resetMs;
      }
    });
    if (failed > 0) logger.warn('rate-limit counts not shared', { keys: failed });
  };
  const schedule = () => {
    timer ??= setTimeout(() => {
      flushing = flushing.then(sendUnsent, sendUnsent);
    }, flushMs);
    timer.unref();
  };
  const hitBy = async (key: string, n: number, windowMs: number, limit?: number): Promise<Hit> => {
    const now = performance.now();
    let local = counts.get(key);
    if (!local || local.windowEnd <= now) {
      if (!local && counts.size >= MAX_LOCAL_KEYS) return store.hitBy(key, n, windowMs);
      local = { count: 0, unsent: 0, windowEnd: now + windowMs, windowMs, sharedAt: Number.NEGATIVE_INFINITY };
      counts.set(key, local);
    }
    local.count += n;
    if (limit === undefined || (local.count <= limit / 2 && now - local.sharedAt <= 2 * flushMs)) {
      addUnsent(key, local, n);
      return { count: local.count, resetMs: local.windowEnd - now };
    }
    // New here, out of date, or near the limit: counted in the store now, and the shared count (with this gateway's hits not yet sent) decides.
    const counting = local;
    try {
      const shared = await store.hitBy(key, n, windowMs);
      const count = shared.count + counting.unsent;
      if (counts.get(key) === counting) {
        counting.count = count;
        counting.sharedAt = performance.now();
        counting.windowEnd = counting.sharedAt + shared.resetMs;
      }
      return { count, resetMs: shared.resetMs };
    } catch (error) {
      // Not shared: kept for the next round trip, and decided on this gateway's count meanwhile.
      addUnsent(key, counting, n);
      logger.warn('rate-limit count not shared', { error: (error as Error).message });
      return { count: counting.count, resetMs: counting.windowEnd - now };
    }
  };
  const flush = async (): Promise<void> => {
    if (timer) {
      clearTimeout(timer);
      timer = null;
      flushing = flushing.then(sendUnsent, sendUnsent);
    }
    await flushing;
  };
  return {
    hit: (key, windowMs, limit) => hitBy(key, 1, windowMs, limit),
    hitBy,
    hitEach: (keys, windowMs) => Promise.all(keys.map((key) => hitBy(key, 1, windowMs))),
    async refund(key, windowMs, n = 1) {
      const local = counts.get(key);
      if (!local || local.windowEnd <= performance.now()) return store.refund(key, windowMs, n);
      local.count -= n;
      addUnsent(key, local, -n);
    },
    flush,
    async close() {
      await flush();
      await store.close();
    },
  };
}
