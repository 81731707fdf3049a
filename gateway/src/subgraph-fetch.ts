import { GraphQLError } from 'graphql';
import { ErrorCode } from '../../platform/contracts/errors.js';
import type { Principal } from '../../platform/contracts/principal.js';
import { connectionPool, type PostAnswer } from '../../platform/http/client.js';
import { REQUEST_ID_HEADER } from '../../platform/http/server.js';
import type { Transport } from '../../platform/http/transport.js';
import type { Logger } from '../../platform/runtime/logger.js';
import { CLIENT_IP_HEADER, PRINCIPAL_HEADER, signClientIp, signPrincipal } from '../../platform/security/signed-headers.js';
import { deduplicatedFetches, subgraphFetches } from '../../platform/telemetry/metrics.js';
import type { Subgraph, SubgraphAnswer, SubgraphOperation } from './execution/plan-execution.js';

// The gateway's calls to its subgraphs: each fetch of a query plan as one POST with signed headers
// (SubgraphSource), and the fetcher under it that shares identical reads in flight.

/** How long a write to a subgraph is waited for (a hung subgraph must not hold the request and its socket forever). */
const WRITE_TIMEOUT_MS = 300_000;

/** Fetches to subgraphs since the start: sent, and answered by an identical read in flight instead (deduplicated). */
export interface SubgraphFetchCounts {
  sent: number;
  shared: number;
}

/** Whether a subgraph request body is a read: the query planner's fetches of queries start with `query` (or a bare selection set). */
const isRead = (body: string) => body.startsWith('{"query":"query') || body.startsWith('{"query":"{');

/**
 * POSTs a subgraph request (`headers` with lower-case names, `body` the JSON text) and reads the
 * whole answer. `unshared` marks the fetches of a mutation's plan: sent on their own, never joined
 * to a read in flight (which could predate the write).
 */
export type SubgraphFetcher = ((url: string, headers: Record<string, string>, body: string, unshared: boolean) => Promise<PostAnswer>) & {
  /** Fetches sent so far, and those answered by one in flight. */
  counts: SubgraphFetchCounts;
};

/**
 * The gateway's fetch to its subgraphs: POSTs over a keep-alive `http.request` pool of its own
 * (unbounded: a subgraph's nested call through the graph never waits for a socket held by the
 * call that made it), and identical reads in flight at the same time (same subgraph, same signed
 * principal, same query and variables) sent once, each caller getting the answer. Writes are
 * never shared.
 */
export function createSubgraphFetcher(timeoutMs: number, transport: Transport, subgraphOf: (url: string) => string): SubgraphFetcher {
  const pool = connectionPool();
  const send = async (url: string, headers: Record<string, string>, body: string, timeout: number): Promise<PostAnswer> => {
    const started = performance.now();
    let outcome = 'error';
    try {
      const answer = await transport.post(url, headers, body, timeout, pool);
      if (answer.status < 500) outcome = 'ok';
      return answer;
    } finally {
      subgraphFetches.observe({ subgraph: subgraphOf(url), outcome }, (performance.now() - started) / 1000);
    }
  };
  const inFlight = new Map<string, Promise<PostAnswer>>();
  const counts: SubgraphFetchCounts = { sent: 0, shared: 0 };
  // No read outlives the timeout: its fields are then UNAVAILABLE. A write is waited for, up to
  // WRITE_TIMEOUT_MS: cut off sooner, its outcome would be unknown, and a retry (even with its
  // Idempotency-Key, freed by the failure) could repeat it.
  const fetcher = (url: string, headers: Record<string, string>, body: string, unshared: boolean): Promise<PostAnswer> => {
    const read = isRead(body);
    if (unshared || !read) {
      counts.sent += 1;
      return send(url, headers, body, read ? timeoutMs : WRITE_TIMEOUT_MS);
    }
    const key = `${url}\n${headers[PRINCIPAL_HEADER] ?? ''}\n${body}`;
    let answer = inFlight.get(key);
    if (answer) {
      counts.shared += 1;
      deduplicatedFetches.inc({ subgraph: subgraphOf(url) });
    } else {
      counts.sent += 1;
      answer = send(url, headers, body, timeoutMs).finally(() => inFlight.delete(key));
      inFlight.set(key, answer);
    }
    return answer;
  };
  return Object.assign(fetcher, { counts });
}

/** A call without a request context (none is expected with a static supergraph) gets no rights. */
const NO_ONE: Principal = { kind: 'anonymous' };

/** How long a principal's signature is reused: well inside its minute of validity, so every fetch that carries it arrives in time. */
const RESIGN_AFTER_MS = 20_000;
/** Client addresses whose signature is kept; a full table is emptied rather than grown. */
const MAX_SIGNED_ADDRESSES = 10_000;

/** The signed headers of the gateway's subgraph calls, each computed once and reused rather than once per fetch. */
export interface HeaderSigner {
  principal(principal: Principal): string;
  clientIp(address: string): string;
}

/**
 * Signs principals and client addresses with `secret`. A principal's signature is kept by the
 * principal object (the one a request's context holds, which the session memory hands to every
 * request of that session) for `RESIGN_AFTER_MS`; an address's for as long as the table holds it.
 */
export function createHeaderSigner(secret: string): HeaderSigner {
  const principals = new WeakMap<Principal, { value: string; signedAt: number }>();
  const addresses = new Map<string, string>();
  return {
    principal(principal) {
      const now = Date.now();
      const known = principals.get(principal);
      if (known && now - known.signedAt < RESIGN_AFTER_MS) return known.value;
      const value = signPrincipal(principal, secret, now);
      principals.set(principal, { value, signedAt: now });
      return value;
    },
    clientIp(address) {
      let value = addresses.get(address);
      if (value === undefined) {
        value = signClientIp(address, secret);
        if (addresses.size >= MAX_SIGNED_ADDRESSES) addresses.clear();
        addresses.set(address, value);
      }
      return value;
    },
  };
}

/**
 * One subgraph as the gateway's query plans reach it: each fetch goes out with the signed
 * principal, the request id and the signed client address, as one POST of the fetch's operation.
 * It does what Apollo's `RemoteGraphQLDataSource` does for a static supergraph without its
 * per-fetch `node-fetch` request, headers and response objects.
 */
export class SubgraphSource implements Subgraph {
  constructor(
    private readonly url: string,
    private readonly name: string,
    private readonly fetch: SubgraphFetcher,
    private readonly signer: HeaderSigner,
    private readonly logger: Logger,
  ) {}

  async send(operation: SubgraphOperation): Promise<SubgraphAnswer> {
    const { context } = operation;
    const headers: Record<string, string> = {
      'content-type': 'application/json',
      [PRINCIPAL_HEADER]: this.signer.principal(context.principal ?? NO_ONE),
    };
    if (context.requestId) headers[REQUEST_ID_HEADER] = context.requestId;
    if (context.clientIp) headers[CLIENT_IP_HEADER] = this.signer.clientIp(context.clientIp);
    // The query first: the fetcher tells a read from a write by how the body starts.
    const body = JSON.stringify({ query: operation.query, variables: operation.variables, operationName: operation.operationName });
    try {
      // The reads of a mutation's plan must see its writes: they are not shared with reads already in flight.
      const answer = await this.fetch(this.url, headers, body, operation.mutation);
      if (answer.status < 200 || answer.status >= 300) throw this.refusal(answer);
      const parsed = bodyOf(answer);
      if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))
        throw new Error(`the subgraph answered ${answer.status} without a JSON object`);
      return parsed;
    } catch (error) {
      throw this.unavailable(error);
    }
  }

  /**
   * A subgraph that cannot be reached (refused, reset, timed out) or answers what is not GraphQL
   * is UNAVAILABLE for the fields it serves (503 through the REST adapter), without the driver's
   * message or the subgraph's address; the other subgraphs' fields are still answered.
   */
  private unavailable(error: unknown): GraphQLError {
    if (error instanceof GraphQLError) return error;
    this.logger.warn('subgraph unavailable', {
      subgraph: this.name,
      error: error instanceof Error ? error.message : String(error),
      cause: error instanceof Error ? (error.cause as Error | undefined)?.message : undefined,
    });
    return new GraphQLError('A service this operation needs is unavailable; try again shortly.', {
      originalError: error instanceof Error ? error : undefined,
      extensions: { code: ErrorCode.UNAVAILABLE },
    });
  }

  /**
   * A subgraph answers 4xx when it refuses the request as a whole, for example a variable that
   * fails a custom scalar (the gateway passes scalar values through unchecked). Its error, with
   * its code and field, is what the client should see, not "400: Bad Request" with the
   * subgraph's URL and stack trace.
   */
  private refusal(answer: PostAnswer): GraphQLError {
    const body = bodyOf(answer) as { errors?: Array<{ message?: string; extensions?: { code?: string; field?: string } }> } | string;
    const first = typeof body === 'object' ? body.errors?.[0] : undefined;
    if (answer.status < 500 && first?.message && first.extensions?.code) {
      const { code, field } = first.extensions;
      return new GraphQLError(first.message, { extensions: { code, ...(field ? { field } : {}) } });
    }
    return new GraphQLError(`A subgraph answered ${answer.status}.`, {
      extensions: { code: answer.status === 401 ? ErrorCode.UNAUTHENTICATED : ErrorCode.UNAVAILABLE },
    });
  }
}

/** The answer's JSON where it says it is JSON (a parse failure throws), its text otherwise. */
function bodyOf(answer: PostAnswer): unknown {
  const type = answer.headers['content-type'];
  const json = typeof type === 'string' && (type.startsWith('application/json') || type.startsWith('application/graphql-response+json'));
  return json ? JSON.parse(answer.text) : answer.text;
}
