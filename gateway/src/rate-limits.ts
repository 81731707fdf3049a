import { isIPv6 } from 'node:net';
import type { ApolloServerPlugin } from '@apollo/server';
import { Redis } from 'ioredis';
import { appError, ErrorCode } from '../../platform/graphql/errors.js';
import { rateLimitRefusals } from '../../platform/telemetry/metrics.js';
import type { Logger } from '../../platform/runtime/logger.js';
import { principalIdentity, type Principal } from '../../platform/security/principal.js';
import { fragmentsOf, rootFieldNames } from './operation-limits.js';

/** Requests per window, by who is counted. */
export interface RateLimits {
  windowSeconds: number;
  /** Each root field, per credential (or per address for anonymous callers). */
  perCredential: number;
  /** Each root field, per client address, whoever calls. */
  perAddress: number;
  /** The sensitive fields (log in, get tokens, recovery and confirmation codes), per credential and per address. */
  sensitive: number;
}

/** Fields that guess or issue credentials: they get the strict limit, on top of the lockout. */
export const SENSITIVE_FIELDS = new Set([
  'login', 'aggregatorGetToken', 'aggregatorChangePassword', 'merchantToken', 'customerToken',
  'requestRecoveryCode', 'confirmEmail', 'confirmMobile', 'registerDevice', 'submitProspectData',
  // Merchant ids are global: registering one tells whether it is in use, so guesses are few.
  'saveMerchant',
]);

/** One key's count in its current window, and the milliseconds left in that window. */
export interface Hit {
  count: number;
  resetMs: number;
}

/**
 * Counts a hit of KEYS[1] in its fixed window of ARGV[1] ms, started by its first hit; answers
 * the count and the milliseconds left. One key a call, so that it runs on a Redis Cluster too;
 * the client pipelines a request's calls (and other requests') into one round trip.
 */
const HIT_WINDOW = `
local count = redis.call('INCR', KEYS[1])
local left = redis.call('PTTL', KEYS[1])
if left < 0 then
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
  left = tonumber(ARGV[1])
end
return { count, left }`;

/** A counter of hits in fixed windows: Redis where REDIS_URL is set (shared by every gateway), else this process. */
export interface HitCounter {
  /** Counts one hit of `key`; returns the count in the current window and the milliseconds left in it. */
  hit(key: string, windowMs: number): Promise<Hit>;
  /** Counts one hit of each key at once (pipelined into one round trip to Redis); the answers in the keys' order. */
  hitEach(keys: readonly string[], windowMs: number): Promise<Hit[]>;
  /** Takes back one hit of `key` counted in the current window. */
  refund(key: string, windowMs: number): Promise<void>;
  close(): Promise<void>;
}

export function createHitCounter(redisUrl: string | undefined, namespace: string, logger: Logger): HitCounter {
  if (redisUrl) {
    // Fail fast while Redis is away: a command not answered in 250 ms fails (and the caller goes on without it).
    const redis = new Redis(redisUrl, { commandTimeout: 250, maxRetriesPerRequest: 1, enableAutoPipelining: true });
    redis.on('error', (error: Error) => logger.warn('rate-limit store error', { error: error.message }));
    redis.defineCommand('hitWindow', { numberOfKeys: 1, lua: HIT_WINDOW });
    const hitWindow = (redis as unknown as { hitWindow(key: string, windowMs: number): Promise<[number, number]> }).hitWindow.bind(redis);
    const hitEach = (keys: readonly string[], windowMs: number): Promise<Hit[]> =>
      Promise.all(keys.map(async (key) => {
        const [count, resetMs] = await hitWindow(`${namespace}ratelimit:${key}`, windowMs);
        return { count, resetMs };
      }));
    return {
      hitEach,
      async hit(key, windowMs) {
        return (await hitEach([key], windowMs))[0]!;
      },
      async refund(key, windowMs) {
        const name = `${namespace}ratelimit:${key}`;
        // Should the window have ended meanwhile, the next one starts one lower for at most its length.
        await redis.multi().decr(name).pexpire(name, windowMs, 'NX').exec();
      },
      close: async () => {
        await redis.quit();
      },
    };
  }
  const windows = new Map<string, { count: number; resetAt: number }>();
  const sweep = setInterval(() => {
    const now = Date.now();
    for (const [key, window] of windows) if (window.resetAt <= now) windows.delete(key);
  }, 60_000);
  sweep.unref();
  const hit = (key: string, windowMs: number): Hit => {
    const now = Date.now();
    let window = windows.get(key);
    if (!window || window.resetAt <= now) {
      window = { count: 0, resetAt: now + windowMs };
      windows.set(key, window);
    }
    window.count += 1;
    return { count: window.count, resetMs: window.resetAt - now };
  };
  return {
    async hit(key, windowMs) {
      return hit(key, windowMs);
    },
    async hitEach(keys, windowMs) {
      return keys.map((key) => hit(key, windowMs));
    },
    async refund(key) {
      const window = windows.get(key);
      if (window && window.resetAt > Date.now()) window.count -= 1;
    },
    close: async () => clearInterval(sweep),
  };
}

/**
 * The address a limit counts against: an IPv4 address itself, an IPv6 address by its /64 (one
 * subscriber's network: a client given a /64 could otherwise take a fresh address per request).
 */
export function addressGroup(ip: string): string {
  const bare = ip.split('%')[0]!.toLowerCase();
  if (!isIPv6(bare)) return bare;
  // Every spelling to eight numbers: a dotted IPv4 tail is two groups, `::` the zeros it stands for.
  const dotted = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(bare);
  const text = dotted ? `${bare.slice(0, dotted.index)}${((Number(dotted[1]) << 8) | Number(dotted[2])).toString(16)}:${((Number(dotted[3]) << 8) | Number(dotted[4])).toString(16)}` : bare;
  const [head = '', tail = ''] = text.split('::');
  const left = head ? head.split(':') : [];
  const right = tail ? tail.split(':') : [];
  const groups = text.includes('::') ? [...left, ...Array<string>(8 - left.length - right.length).fill('0'), ...right] : left;
  const numbers = groups.map((group) => parseInt(group, 16));
  // An IPv4-mapped address (::ffff:a.b.c.d, however written) is its IPv4 client.
  if (numbers.slice(0, 5).every((n) => n === 0) && numbers[5] === 0xffff) {
    return [numbers[6]! >> 8, numbers[6]! & 255, numbers[7]! >> 8, numbers[7]! & 255].join('.');
  }
  return `${numbers.slice(0, 4).map((n) => n.toString(16)).join(':')}::/64`;
}

/** The context the rate limits read. */
interface LimitedContext {
  principal?: Principal;
  clientIp?: string | null;
  sessionConfirmed?: Promise<void> | null;
}

/**
 * Rate limits per operation: every root field (each alias a hit of its own) counts against the
 * caller (who the principal is, not how its credential is spelled) and against its client
 * address. Internal services are not limited, nor the gateway's own executions of subscription
 * events (no HTTP request; subscribing is capped per connection), in fixed windows; the sensitive fields
 * have a strict limit. Over a limit: 429 RATE_LIMITED with Retry-After, before any subgraph is
 * called. When the store does not answer, requests are served and a warning logged.
 */
export function rateLimitsPlugin(limits: RateLimits, counter: HitCounter, logger: Logger): ApolloServerPlugin<LimitedContext> {
  const windowMs = limits.windowSeconds * 1000;
  return {
    async requestDidStart() {
      return {
        async didResolveOperation({ operation, document, contextValue, request }) {
          if (!operation || !request.http || contextValue.principal?.kind === 'service') return;
          const credential = principalIdentity(contextValue.principal);
          const address = contextValue.clientIp ? addressGroup(contextValue.clientIp) : 'unknown';
          const checks: Array<{ key: string; limit: number; field: string }> = [];
          for (const field of rootFieldNames(operation.selectionSet, fragmentsOf(document.definitions))) {
            const sensitive = SENSITIVE_FIELDS.has(field);
            checks.push({ key: `a:${address}:${field}`, limit: sensitive ? limits.sensitive : limits.perAddress, field });
            if (credential) checks.push({ key: `c:${credential}:${field}`, limit: sensitive ? limits.sensitive : limits.perCredential, field });
          }
          let counted: Hit[];
          try {
            counted = await counter.hitEach(checks.map(({ key }) => key), windowMs);
          } catch (error) {
            // The store is down: serve rather than refuse everyone; the lockout still guards the logins.
            logger.warn('rate limit not counted', { error: (error as Error).message });
            return;
          }
          // A session found no longer live gives its credential's hits back: a revoked token cannot spend its user's limit.
          for (const { key } of checks) if (key.startsWith('c:')) contextValue.sessionConfirmed?.catch(() => counter.refund(key, windowMs).catch(() => {}));
          checks.forEach(({ key, limit, field }, i) => {
            const { count, resetMs } = counted[i]!;
            if (count <= limit) return;
            rateLimitRefusals.inc({ limit: SENSITIVE_FIELDS.has(field) ? 'sensitive' : key.startsWith('c:') ? 'per-credential' : 'per-address' });
            const retryAfterSeconds = Math.max(1, Math.ceil(resetMs / 1000));
            const error = appError(ErrorCode.RATE_LIMITED, `Too many ${field} requests: at most ${limit} in ${limits.windowSeconds} s; try again in ${retryAfterSeconds} s.`, { retryAfterSeconds });
            (error.extensions as Record<string, unknown>).http = { status: 429, headers: new Map([['retry-after', String(retryAfterSeconds)]]) };
            throw error;
          });
        },
      };
    },
  };
}
