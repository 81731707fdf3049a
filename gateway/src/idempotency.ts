import { createHash } from 'node:crypto';
import { HeaderMap, type ApolloServerPlugin, type GraphQLResponse } from '@apollo/server';
import { Kind, type FormattedExecutionResult } from 'graphql';
import { Redis } from 'ioredis';
import { appError, ErrorCode } from '../../platform/errors.js';
import type { Logger } from '../../platform/logger.js';
import { CREDENTIAL_ISSUING_FIELDS } from '../../platform/principal.js';

/** The header a client sends to make a POST safe to retry (Stripe; IETF httpapi Idempotency-Key draft). */
export const IDEMPOTENCY_KEY_HEADER = 'idempotency-key';

/** What a key holds: a request in progress, or the answer it got. */
type Entry = { fingerprint: string; state: 'in_progress' } | { fingerprint: string; state: 'done'; status: number; result: FormattedExecutionResult };

/** Where keys are kept: Redis where REDIS_URL is set (every gateway sees them), else this process. */
export interface IdempotencyStore {
  /** Claims the key for a request; answers the existing entry when it is taken. */
  claim(key: string, fingerprint: string, ttlMs: number): Promise<Entry | null>;
  complete(key: string, entry: Entry, ttlMs: number): Promise<void>;
  release(key: string): Promise<void>;
  close(): Promise<void>;
}

export function createIdempotencyStore(redisUrl: string | undefined, namespace: string, logger: Logger): IdempotencyStore {
  if (redisUrl) {
    const redis = new Redis(redisUrl, { maxRetriesPerRequest: 2 });
    redis.on('error', (error: Error) => logger.warn('idempotency store error', { error: error.message }));
    const name = (key: string) => `${namespace}idempotency:${key}`;
    return {
      async claim(key, fingerprint, ttlMs) {
        const claimed = await redis.set(name(key), JSON.stringify({ fingerprint, state: 'in_progress' } satisfies Entry), 'PX', ttlMs, 'NX');
        if (claimed === 'OK') return null;
        const existing = await redis.get(name(key));
        return existing ? (JSON.parse(existing) as Entry) : { fingerprint, state: 'in_progress' };
      },
      async complete(key, entry, ttlMs) {
        await redis.set(name(key), JSON.stringify(entry), 'PX', ttlMs);
      },
      async release(key) {
        await redis.del(name(key));
      },
      close: async () => {
        await redis.quit();
      },
    };
  }
  const entries = new Map<string, { entry: Entry; expiresAt: number }>();
  const sweep = setInterval(() => {
    const now = Date.now();
    for (const [key, held] of entries) if (held.expiresAt <= now) entries.delete(key);
  }, 60_000);
  sweep.unref();
  return {
    async claim(key, fingerprint, ttlMs) {
      const held = entries.get(key);
      if (held && held.expiresAt > Date.now()) return held.entry;
      entries.set(key, { entry: { fingerprint, state: 'in_progress' }, expiresAt: Date.now() + ttlMs });
      return null;
    },
    async complete(key, entry, ttlMs) {
      entries.set(key, { entry, expiresAt: Date.now() + ttlMs });
    },
    async release(key) {
      entries.delete(key);
    },
    close: async () => clearInterval(sweep),
  };
}

/** The context the plugin reads: who is calling, by credential (hashed) or address. */
interface IdempotencyContext {
  credential?: string;
  clientIp?: string | null;
}

const sha256 = (text: string) => createHash('sha256').update(text).digest('base64url');

/**
 * `Idempotency-Key` on mutations (and so on every REST POST, which the adapter passes it
 * through for): the first request with a key runs and its answer is kept for `ttlSeconds`; a
 * repeat with the same operation and variables gets that answer again (`Idempotent-Replayed:
 * true`) without running; the same key with another request is 422; a repeat while the first
 * still runs is 409. Keys are per caller: one client's key never answers another's request. A
 * 5xx answer, or one with an INTERNAL or UNAVAILABLE error, is not kept, so the client may retry it.
 * Mutations that issue credentials (log in, tokens, device registration) are not covered: their
 * answers would put a live credential in the store.
 */
export function idempotencyPlugin(store: IdempotencyStore, ttlSeconds: number): ApolloServerPlugin<IdempotencyContext> {
  const ttlMs = ttlSeconds * 1000;
  return {
    async requestDidStart({ request, contextValue }) {
      const sent = request.http?.headers.get(IDEMPOTENCY_KEY_HEADER);
      if (!sent) return {};
      let claimedKey: string | null = null;
      let fingerprint = '';
      let replay: Extract<Entry, { state: 'done' }> | null = null;
      return {
        async didResolveOperation({ operation }) {
          if (operation?.operation !== 'mutation') return;
          // An answer carrying a credential is never kept: the key does not apply.
          if (operation.selectionSet.selections.some((s) => s.kind === Kind.FIELD && CREDENTIAL_ISSUING_FIELDS.has(s.name.value))) return;
          if (sent.length > 255 || !/^[\x21-\x7e]+$/.test(sent)) {
            throw appError(ErrorCode.VALIDATION_FAILED, 'Idempotency-Key must be 1-255 visible ASCII characters.', { field: IDEMPOTENCY_KEY_HEADER, httpStatus: 400 });
          }
          const caller = contextValue.credential ? `c:${sha256(contextValue.credential)}` : `a:${contextValue.clientIp ?? 'unknown'}`;
          const key = `${caller}:${sha256(sent)}`;
          fingerprint = sha256(JSON.stringify([request.query ?? '', request.operationName ?? null, request.variables ?? {}]));
          const existing = await store.claim(key, fingerprint, ttlMs);
          if (!existing) {
            claimedKey = key;
            return;
          }
          if (existing.fingerprint !== fingerprint) {
            throw appError(ErrorCode.IDEMPOTENCY_KEY_REUSED, 'This Idempotency-Key was used with another request.', { field: IDEMPOTENCY_KEY_HEADER, httpStatus: 422 });
          }
          if (existing.state === 'in_progress') {
            throw appError(ErrorCode.CONFLICT, 'A request with this Idempotency-Key is still in progress; retry later.', { field: IDEMPOTENCY_KEY_HEADER, httpStatus: 409 });
          }
          replay = existing;
        },
        async responseForOperation(): Promise<GraphQLResponse | null> {
          if (!replay) return null;
          const headers = new HeaderMap([['idempotent-replayed', 'true']]);
          return { http: { status: replay.status, headers }, body: { kind: 'single', singleResult: replay.result } };
        },
        async willSendResponse({ response }) {
          if (replay) {
            response.http.status = replay.status;
            response.http.headers.set('idempotent-replayed', 'true');
            return;
          }
          if (!claimedKey) return;
          const status = response.http.status ?? 200;
          // A failure of ours is not the request's answer: the client may retry it.
          const failed = response.body.kind === 'single' && response.body.singleResult.errors?.some((e) => e.extensions?.code === ErrorCode.INTERNAL || e.extensions?.code === ErrorCode.UNAVAILABLE);
          if (response.body.kind !== 'single' || status >= 500 || failed) {
            await store.release(claimedKey);
            return;
          }
          await store.complete(claimedKey, { fingerprint, state: 'done', status, result: response.body.singleResult }, ttlMs);
        },
      };
    },
  };
}
