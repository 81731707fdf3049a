import { hash } from 'node:crypto';
import { HeaderMap, type GraphQLResponse } from '@apollo/server';
import type { RequestPlugin } from '../../platform/graphql/request-plugin.js';
import { OperationTypeNode, type FormattedExecutionResult } from 'graphql';
import { Redis } from 'ioredis';
import { ErrorCode } from '../../platform/contracts/errors.js';
import type { Logger } from '../../platform/runtime/logger.js';
import { CREDENTIAL_ISSUING_FIELDS, principalIdentity, type Principal } from '../../platform/contracts/principal.js';
import { rootFieldsOf } from './operation-limits.js';

/** The header a client sends to make a POST safe to retry (Stripe; IETF httpapi Idempotency-Key draft). */
const IDEMPOTENCY_KEY_HEADER = 'idempotency-key';

/** What a key holds: a request in progress, or the answer it got. */
type Entry =
  { fingerprint: string; state: 'in_progress' } | { fingerprint: string; state: 'done'; status: number; result: FormattedExecutionResult };

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
    // Fail fast while Redis is away: a command not answered in 250 ms fails (and the caller goes on without it).
    const redis = new Redis(redisUrl, { commandTimeout: 250, maxRetriesPerRequest: 1 });
    redis.on('error', (error: Error) => logger.warn('idempotency store error', { error: error.message }));
    const name = (key: string) => `${namespace}idempotency:${key}`;
    return {
      async claim(key, fingerprint, ttlMs) {
        const claimed = await redis.set(
          name(key),
          JSON.stringify({ fingerprint, state: 'in_progress' } satisfies Entry),
          'PX',
          ttlMs,
          'NX',
        );
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

/** The context the plugin reads: who is calling, or from where when anonymous. */
interface IdempotencyContext {
  principal?: Principal;
  clientIp?: string | null;
}

const sha256 = (text: string) => hash('sha256', text, 'base64url');

/** An answer refusing the request over its key (an error thrown from responseForOperation would be a 500). */
function refusal(status: number, code: ErrorCode, message: string): GraphQLResponse {
  return {
    http: { status, headers: new HeaderMap() },
    body: { kind: 'single', singleResult: { errors: [{ message, extensions: { code, field: IDEMPOTENCY_KEY_HEADER } }] } },
  };
}
/** How long a key is held while its request runs; a gateway that dies mid-request frees it after this. */
const IN_PROGRESS_LEASE_MS = 60_000;

/**
 * `Idempotency-Key` on mutations (and so on every REST route that changes state, which the
 * adapter passes it through for): the first request with a key runs and its answer is kept for
 * `ttlSeconds`; a repeat with the same operation and variables gets that answer again
 * (`Idempotent-Replayed: true`) without running; the same key with another request is 422; a
 * repeat while the first still runs is 409. Keys are per caller (who the principal is; the
 * address for anonymous callers). Only answers of a mutation that ran (some root field has data)
 * are kept: a refusal, or a failure before anything ran, frees the key for a retry. The key is
 * claimed after every other check of the request passed. Mutations whose answer carries a
 * secret are not covered. When the store does not answer, the request runs unkeyed (logged).
 */
export function idempotencyPlugin(store: IdempotencyStore, ttlSeconds: number, logger: Logger): RequestPlugin<IdempotencyContext> {
  const ttlMs = ttlSeconds * 1000;
  return {
    async requestDidStart({ request, contextValue }) {
      const sent = request.http?.headers.get(IDEMPOTENCY_KEY_HEADER);
      if (!sent) return {};
      let claimedKey: string | null = null;
      let fingerprint = '';
      let replay: Extract<Entry, { state: 'done' }> | null = null;
      return {
        // Runs only once every plugin's didResolveOperation passed (limits, rate limits): a refused request claims nothing.
        async responseForOperation({ operation, document }): Promise<GraphQLResponse | null> {
          if (operation.operation !== OperationTypeNode.MUTATION) return null;
          if (rootFieldsOf(operation, document).some((field) => CREDENTIAL_ISSUING_FIELDS.has(field))) return null;
          if (sent.length > 255 || !/^[\x21-\x7e]+$/.test(sent)) {
            return refusal(400, ErrorCode.VALIDATION_FAILED, 'Idempotency-Key must be 1-255 visible ASCII characters.');
          }
          const caller = principalIdentity(contextValue.principal) ?? `address:${contextValue.clientIp ?? 'unknown'}`;
          const key = `${sha256(caller)}:${sha256(sent)}`;
          fingerprint = sha256(JSON.stringify([request.query ?? '', request.operationName ?? null, request.variables ?? {}]));
          let existing: Entry | null;
          try {
            existing = await store.claim(key, fingerprint, IN_PROGRESS_LEASE_MS);
          } catch (error) {
            logger.warn('idempotency key not claimed: the request runs unkeyed', { error: (error as Error).message });
            return null;
          }
          if (!existing) {
            claimedKey = key;
            return null;
          }
          if (existing.fingerprint !== fingerprint)
            return refusal(422, ErrorCode.IDEMPOTENCY_KEY_REUSED, 'This Idempotency-Key was used with another request.');
          if (existing.state === 'in_progress')
            return refusal(409, ErrorCode.CONFLICT, 'A request with this Idempotency-Key is still in progress; retry later.');
          replay = existing;
          return {
            http: { status: existing.status, headers: new HeaderMap([['idempotent-replayed', 'true']]) },
            body: { kind: 'single', singleResult: existing.result },
          };
        },
        async willSendResponse({ response }) {
          if (replay) {
            response.http.status = replay.status;
            response.http.headers.set('idempotent-replayed', 'true');
            return;
          }
          if (!claimedKey) return;
          const status = response.http.status ?? 200;
          const result = response.body.kind === 'single' ? response.body.singleResult : null;
          const ran = result?.data != null && Object.values(result.data).some((value) => value !== null);
          try {
            if (!result || status >= 500 || !ran) await store.release(claimedKey);
            else await store.complete(claimedKey, { fingerprint, state: 'done', status, result }, ttlMs);
          } catch (error) {
            // The answer stands; only its keeping failed (the key frees itself when its lease ends).
            logger.warn('idempotency answer not kept', { error: (error as Error).message });
          }
        },
      };
    },
  };
}
