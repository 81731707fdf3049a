import type { IncomingHttpHeaders } from 'node:http';
import type { BaseContext } from '@apollo/server';
import type { RequestPlugin } from '../../platform/graphql/request-plugin.js';
import { GraphQLError, OperationTypeNode } from 'graphql';
import { SUBGRAPH_NAMES, type Config } from '../../platform/runtime/config.js';
import { appError, ErrorCode } from '../../platform/contracts/errors.js';
import { REQUEST_ID_HEADER } from '../../platform/http/server.js';
import type { EventBus } from '../../platform/messaging/event-bus.js';
import { endsSession, SESSIONS_ENDED } from '../../platform/contracts/events.js';
import { PRINCIPAL_HEADER, signPrincipal, verifyPrincipal } from '../../platform/security/signed-headers.js';
import { SESSION_RESOLVE_PATH, type Principal, type ResolvedSession } from '../../platform/contracts/principal.js';
import { verifyJwt } from '../../platform/security/jwt.js';
import { sha256 } from '../../platform/security/secrets.js';
import { defaultServiceScope } from '../../platform/security/service-scope.js';
import { rootFieldsOf } from './operation-limits.js';
import type { PostAnswer } from '../../platform/http/client.js';
import { HTTP_TRANSPORT, type Transport } from '../../platform/http/transport.js';
import { sessionLookups as sessionLookupsTotal } from '../../platform/telemetry/metrics.js';

/** The gateway's own identity when it calls a subgraph's internal routes. */
const GATEWAY: Principal = { kind: 'service', service: 'gateway' };

/** The headers that carry a credential; a request sends at most one. */
const CREDENTIAL_HEADERS = [PRINCIPAL_HEADER, 'x-service-key', 'x-svc-token', 'x-svc-jwtoken', 'token'] as const;

/** How many session tokens' owners the gateway remembers (by the token's hash). */
const KNOWN_SESSIONS = 10_000;

/**
 * A session token the gateway has resolved: whose it is, and whether it may be answered as live
 * without a read: until `keptUntil` (the monotonic clock, so a clock set back cannot stretch it)
 * and before the session's own `expiresAt` (the wall clock, as the session store keeps it),
 * provided the bus's continuity is still `continuity`.
 */
interface KnownSession {
  principal: Principal;
  keptUntil: number;
  expiresAt: number;
  continuity: number | null;
}

/** Root fields that end the caller's own session: the gateway that served them stops answering it from memory before it answers. */
const OWN_SESSION_ENDING_FIELDS: ReadonlySet<string> = new Set(['logout', 'aggregatorChangePassword']);

/**
 * A request's principal. For a session token the gateway has resolved before, the principal is
 * known at once (a session never changes hands). Where the gateway may not answer it from memory,
 * the session and its user are read afresh: `confirmed` settles when they are, and rejects (401,
 * or 503 when the store does not answer) if the session is no longer live. Null when the
 * principal is established in full.
 */
interface Authentication {
  principal: Principal;
  confirmed: Promise<void> | null;
}

/** Establishes a request's principal in full: the session, if any, read afresh before it answers. */
export interface Authenticator {
  (headers: IncomingHttpHeaders | Record<string, string | undefined>, requestId: string): Promise<Principal>;
  /** The principal at once for a session token seen before, with its confirmation pending; otherwise in full. */
  early(headers: IncomingHttpHeaders | Record<string, string | undefined>, requestId: string): Promise<Authentication>;
  /**
   * The principal when it is known without any work: no credential, or a session token answered
   * from memory. Null otherwise (a JWT, a service, a session to read, a credential `early` refuses).
   */
  atOnce(headers: IncomingHttpHeaders | Record<string, string | undefined>): Principal | null;
  /** Session tokens answered so far: from memory, and by a read of the session route. */
  sessionLookups(): SessionLookups;
  /** Stops answering the session of these headers' token from memory (it is read again next time). */
  forget(headers: IncomingHttpHeaders | Record<string, string | undefined>): void;
  /** Stops listening for announcements. */
  close(): void;
}

/** How the gateway has answered session tokens since it started. */
export interface SessionLookups {
  fromMemory: number;
  read: number;
}

/**
 * The key of the session token a set of headers carries (the hash of header and token), or null
 * when they carry no session token, or more than one credential: what the subscription server
 * matches a connection's credentials by when the session ends.
 */
export function sessionTokenKey(headers: IncomingHttpHeaders | Record<string, string | undefined>): string | null {
  const sent = CREDENTIAL_HEADERS.filter((name) => headers[name] !== undefined);
  const header = sent[0];
  if (sent.length !== 1 || (header !== 'token' && header !== 'x-svc-token')) return null;
  const value = headers[header];
  return typeof value === 'string' && value !== '' ? sha256(`${header}\n${value}`) : null;
}

const samePrincipal = (a: Principal, b: Principal) => JSON.stringify(a) === JSON.stringify(b);

/**
 * Establishes the principal of a request once: a subgraph from its signed internal principal,
 * an internal service from `x-service-key`, an aggregator user from `x-svc-token`, a merchant or a
 * payment link's customer from the JWT in `x-svc-jwtoken` (verified here, without a round trip),
 * an end user or prospect from `token`. No credential means an anonymous principal, which may
 * only log in or start onboarding; a credential that does not resolve is refused with 401.
 *
 * With `sessionEvents` (the bus the user subgraph announces ended sessions on) a session found
 * live is answered from memory for up to `sessionCacheSeconds`, and never past its expiry. A
 * revocation or block ends that as its announcement arrives; so does any moment the bus may have
 * missed one (its continuity changes), after which every token is read again.
 */
export function createAuthenticator(
  config: Pick<Config, 'internalSecret' | 'jwtSecret' | 'serviceKeyHashes' | 'serviceKeyScopes' | 'sessionCacheSeconds' | 'subgraphUrls'>,
  sessionEvents?: EventBus,
  transport: Transport = HTTP_TRANSPORT,
): Authenticator {
  const resolveUrl = new URL(SESSION_RESOLVE_PATH, config.subgraphUrls.user).toString();
  const unauthenticated = (message: string) => appError(ErrorCode.UNAUTHENTICATED, message, { httpStatus: 401 });
  /** Both by the hash of header and token: the reads in flight, and the sessions read before. */
  const inFlight = new Map<string, Promise<Principal>>();
  const known = new Map<string, KnownSession>();
  const cacheMs = sessionEvents ? config.sessionCacheSeconds * 1000 : 0;
  /** Counts announcements: a read that one overtook may have found a session live just before it ended. */
  let announcements = 0;
  const lookups: SessionLookups = { fromMemory: 0, read: 0 };
  const unsubscribe = sessionEvents?.subscribe((event) => {
    if (event.type !== SESSIONS_ENDED) return;
    announcements += 1;
    for (const session of known.values()) if (endsSession(event.payload, session.principal)) session.keptUntil = 0;
  });
  /** The principal of a session that may be answered from memory, or null. */
  const liveFromMemory = (session: KnownSession | undefined): Principal | null => {
    if (session === undefined || session.keptUntil <= performance.now() || session.expiresAt <= Date.now()) return null;
    if (session.continuity === null || session.continuity !== sessionEvents?.continuity()) return null;
    lookups.fromMemory += 1;
    sessionLookupsTotal.inc({ source: 'memory' });
    return session.principal;
  };
  const resolveSession = async (header: string, value: string, requestId: string): Promise<ResolvedSession> => {
    let answer: PostAnswer;
    try {
      answer = await transport.post(
        resolveUrl,
        {
          'content-type': 'application/json',
          [PRINCIPAL_HEADER]: signPrincipal(GATEWAY, config.internalSecret),
          [REQUEST_ID_HEADER]: requestId,
        },
        JSON.stringify({ token: value, header }),
        5000,
      );
    } catch {
      throw appError(ErrorCode.UNAVAILABLE, 'The session store did not answer.', { httpStatus: 503 });
    }
    if (answer.status !== 200) throw appError(ErrorCode.UNAVAILABLE, 'The session store did not answer.', { httpStatus: 503 });
    const resolved = JSON.parse(answer.text) as ResolvedSession | { principal: null };
    if (!resolved.principal) throw unauthenticated(`The ${header} is unknown, expired or revoked.`);
    return resolved;
  };
  /** The session behind a token, read afresh; concurrent requests with the same credential share one read. */
  const lookUp = (header: string, value: string, requestId: string, ownerKey: string): Promise<Principal> => {
    let lookup = inFlight.get(ownerKey);
    if (!lookup) {
      const continuity = sessionEvents?.continuity() ?? null;
      const announced = announcements;
      lookups.read += 1;
      sessionLookupsTotal.inc({ source: 'read' });
      lookup = resolveSession(header, value, requestId)
        .then(
          ({ principal, dtsExpiry }) => {
            if (known.size >= KNOWN_SESSIONS && !known.has(ownerKey)) known.delete(known.keys().next().value!);
            const expiresAt = Date.parse(dtsExpiry);
            const trusted =
              cacheMs > 0 &&
              continuity !== null &&
              announcements === announced &&
              sessionEvents?.continuity() === continuity &&
              Number.isFinite(expiresAt);
            known.set(ownerKey, {
              principal,
              keptUntil: trusted ? performance.now() + cacheMs : 0,
              expiresAt: trusted ? expiresAt : 0,
              continuity,
            });
            return principal;
          },
          (error: unknown) => {
            known.delete(ownerKey);
            throw error;
          },
        )
        .finally(() => inFlight.delete(ownerKey));
      inFlight.set(ownerKey, lookup);
    }
    return lookup;
  };
  /** The principal of a merchant or customer JWT. */
  const jwtPrincipal = async (token: string): Promise<Principal> => {
    const claims = await verifyJwt(token, config.jwtSecret);
    if (!claims) throw unauthenticated('The x-svc-jwtoken is not a valid merchant or customer JWT, or it has expired.');
    return claims.typ === 'merchant'
      ? { kind: 'merchant', svcMerchantId: claims.sub, svcAggregatorId: claims.agg }
      : { kind: 'customer', svcTransactionId: claims.sub, svcMerchantId: claims.mer, svcAggregatorId: claims.agg };
  };
  /** The principal of a credential that needs no session read, a JWT to verify, or the session token to read. */
  const classify = (
    headers: IncomingHttpHeaders | Record<string, string | undefined>,
  ): Principal | { jwt: string } | { header: string; value: string } => {
    const sent = CREDENTIAL_HEADERS.filter((name) => headers[name] !== undefined);
    if (sent.length === 0) return { kind: 'anonymous' };
    if (sent.length > 1) throw unauthenticated(`Send one credential header, not ${sent.join(' and ')}.`);
    const header = sent[0]!;
    const value = headers[header];
    if (typeof value !== 'string' || value === '') throw unauthenticated(`The ${header} header is empty.`);
    if (header === PRINCIPAL_HEADER) {
      // A subgraph calling the graph as an internal service, signed with INTERNAL_SECRET.
      const principal = verifyPrincipal(value, config.internalSecret, Date.now(), 'gateway');
      if (principal?.kind !== 'service' || !(SUBGRAPH_NAMES as readonly string[]).includes(principal.service))
        throw unauthenticated('The internal principal is invalid.');
      return principal;
    }
    if (header === 'x-service-key') {
      const service = config.serviceKeyHashes.get(sha256(value));
      if (!service) throw unauthenticated('The service key is not known.');
      // A key's principal carries its scope, so that every subgraph holds it to that; only a test's key named after one of our own services acts as it.
      const scope = config.serviceKeyScopes.get(service);
      return scope === null ? { kind: 'service', service } : { kind: 'service', service, scope: scope ?? defaultServiceScope(service) };
    }
    if (header === 'x-svc-jwtoken') return { jwt: value };
    return { header, value };
  };
  const authenticate = async (headers: IncomingHttpHeaders | Record<string, string | undefined>, requestId: string): Promise<Principal> => {
    const credential = classify(headers);
    if ('kind' in credential) return credential;
    if ('jwt' in credential) return jwtPrincipal(credential.jwt);
    const ownerKey = sha256(`${credential.header}\n${credential.value}`);
    return liveFromMemory(known.get(ownerKey)) ?? lookUp(credential.header, credential.value, requestId, ownerKey);
  };
  const early = async (headers: IncomingHttpHeaders | Record<string, string | undefined>, requestId: string): Promise<Authentication> => {
    const credential = classify(headers);
    if ('kind' in credential) return { principal: credential, confirmed: null };
    if ('jwt' in credential) return { principal: await jwtPrincipal(credential.jwt), confirmed: null };
    const ownerKey = sha256(`${credential.header}\n${credential.value}`);
    const session = known.get(ownerKey);
    const live = liveFromMemory(session);
    if (live) return { principal: live, confirmed: null };
    const owner = session?.principal;
    const lookup = lookUp(credential.header, credential.value, requestId, ownerKey);
    if (!owner) return { principal: await lookup, confirmed: null };
    const confirmed = lookup.then((principal) => {
      if (!samePrincipal(principal, owner)) throw unauthenticated(`The ${credential.header} is unknown, expired or revoked.`);
    });
    // Awaited by whoever answers the request; a request refused before that must not leave it unhandled.
    confirmed.catch(() => {});
    return { principal: owner, confirmed };
  };
  const atOnce = (headers: IncomingHttpHeaders | Record<string, string | undefined>): Principal | null => {
    let credential: ReturnType<typeof classify>;
    try {
      credential = classify(headers);
    } catch {
      return null;
    }
    if ('kind' in credential) return credential.kind === 'anonymous' ? credential : null;
    if ('jwt' in credential) return null;
    return liveFromMemory(known.get(sha256(`${credential.header}\n${credential.value}`)));
  };
  const forget = (headers: IncomingHttpHeaders | Record<string, string | undefined>): void => {
    let credential: ReturnType<typeof classify>;
    try {
      credential = classify(headers);
    } catch {
      return;
    }
    if ('kind' in credential || 'jwt' in credential) return;
    const session = known.get(sha256(`${credential.header}\n${credential.value}`));
    if (session) session.keptUntil = 0;
  };
  return Object.assign(authenticate, { early, atOnce, sessionLookups: () => ({ ...lookups }), forget, close: () => unsubscribe?.() });
}

/**
 * Stops answering the caller's own session from memory once an operation that ends it (logout, an
 * aggregator's password change) has run, before its answer leaves: the next request with the
 * token is read afresh on this gateway even before the announcement has come back on the bus.
 * `ended` is told the request's headers then too (the subscription server closes the
 * connections opened with that token).
 */
export function sessionEndingPlugin(
  authenticate: Authenticator,
  ended?: (headers: Record<string, string | undefined>) => void,
): RequestPlugin<BaseContext> {
  return {
    async requestDidStart() {
      let endsOwnSession = false;
      return {
        async didResolveOperation({ operation, document }) {
          if (operation) endsOwnSession = rootFieldsOf(operation, document).some((field) => OWN_SESSION_ENDING_FIELDS.has(field));
        },
        async willSendResponse({ request, response }) {
          if (!endsOwnSession || !request.http) return;
          const headers: Record<string, string | undefined> = Object.fromEntries(request.http.headers);
          authenticate.forget(headers);
          // Only an operation that ran ends the session; a refused one leaves its connections open.
          if (response.body.kind === 'single' && !response.body.singleResult.errors?.length) ended?.(headers);
        },
      };
    },
  };
}

/** The context the session confirmation reads: the pending confirmation of an early principal. */
interface ConfirmedContext {
  sessionConfirmed?: Promise<void> | null;
}

/**
 * Holds every answer until its session is confirmed. A query runs on an early principal while its
 * session is read (reads change nothing, and nothing of the answer leaves before the
 * confirmation); anything else (mutations, which change things) waits for the confirmation
 * before it runs. A session found no longer live turns any answer into its 401 (503 when the
 * store does not answer).
 */
export function sessionConfirmationPlugin(): RequestPlugin<ConfirmedContext> {
  return {
    async requestDidStart() {
      return {
        async didResolveOperation({ operation, contextValue }) {
          if (contextValue.sessionConfirmed && operation?.operation !== OperationTypeNode.QUERY) await contextValue.sessionConfirmed;
        },
        async willSendResponse({ contextValue, response }) {
          if (!contextValue.sessionConfirmed) return;
          try {
            await contextValue.sessionConfirmed;
          } catch (error) {
            const refusal =
              error instanceof GraphQLError
                ? error
                : appError(ErrorCode.UNAVAILABLE, 'The session store did not answer.', { httpStatus: 503 });
            const { http, ...extensions } = refusal.extensions as { http?: { status?: number } };
            response.body = { kind: 'single', singleResult: { errors: [{ message: refusal.message, extensions }] } };
            response.http.status = http?.status ?? 401;
            for (const [name] of response.http.headers) if (name !== 'content-type') response.http.headers.delete(name);
          }
        },
      };
    },
  };
}
