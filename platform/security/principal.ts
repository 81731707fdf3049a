import type { EventPayloads, EventType } from '../messaging/events.js';
import { createHmac, timingSafeEqual } from 'node:crypto';
import { isIP } from 'node:net';

/** The login channels only a service key may use: the caller is a service acting for a user, not the user's device. */
export const SERVICE_CHANNELS = ['statementGenerator', 'dicBuilder', 'chat'] as const;
export type ServiceChannel = (typeof SERVICE_CHANNELS)[number];

/**
 * What one service key may do, as configured (SERVICE_KEY_SCOPES): which service login channels
 * it may open sessions over, for which users (`'*'`, written out, for every user), and which root
 * fields it may call with its own key. Nothing else: a service key never reads a user's data.
 */
export interface ServiceScope {
  channels: readonly ServiceChannel[];
  users: readonly string[] | '*';
  fields: readonly string[];
}

/** Who is calling, as established once by the gateway. */
export type Principal =
  | { kind: 'anonymous' }
  | { kind: 'user'; userId: string; sessionId: string; channel: string }
  /** Someone onboarding on a device, between `POST /prospect/data` and registration. */
  | { kind: 'prospect'; prospectId: string; sessionId: string; deviceTag: string }
  /**
   * A user of an aggregator client. A `confined` token may read but not change anything: see
   * `requireAggregator`.
   */
  | { kind: 'aggregator'; svcAggregatorId: string; login: string; sessionId: string; tokenType: 'base' | 'confined' }
  /** A merchant of an aggregator, from a merchant JWT (`x-svc-jwtoken` on /public/merchant routes). */
  | { kind: 'merchant'; svcMerchantId: string; svcAggregatorId: string }
  /** A customer holding one payment link, from a customer JWT (`x-svc-jwtoken` on /public/customer routes). */
  | { kind: 'customer'; svcTransactionId: string; svcMerchantId: string; svcAggregatorId: string }
  /**
   * A service: one of the platform's own (no `scope`), or the holder of a service key, limited to
   * its key's `scope` (SERVICE_KEY_SCOPES).
   */
  | { kind: 'service'; service: string; scope?: ServiceScope };

/** The user subgraph's route that turns a `token` header into a principal, for the gateway only. Not part of the graph. */
export const SESSION_RESOLVE_PATH = '/internal/sessions/resolve';

/** What the session route answers: the principal of a live token and when its session expires, or null. */
export interface ResolvedSession {
  principal: Principal;
  /** ISO 8601. */
  dtsExpiry: string;
}

/** The bus event the user subgraph publishes when sessions end before their expiry, so that no gateway answers them from memory. */
export const SESSIONS_ENDED = 'sessions.ended' satisfies EventType;

/** Which sessions a SESSIONS_ENDED event ends: one session, every session of a user, or of an aggregator user. */
export type SessionsEnded = EventPayloads[typeof SESSIONS_ENDED];

/** Whether a SESSIONS_ENDED payload ends the session of `principal`. */
export function endsSession(ended: Record<string, unknown>, principal: Principal): boolean {
  if ('sessionId' in principal && ended.sessionId === principal.sessionId) return true;
  if (principal.kind === 'user' && ended.SvcUserId === principal.userId) return true;
  return principal.kind === 'aggregator' && ended.aggregatorLogin === principal.login;
}

/**
 * The header that carries the caller's address from the REST adapter to the gateway and from the
 * gateway to the subgraphs, signed (`<ip>.<hmac>`) so that a client cannot claim another address.
 */
export const CLIENT_IP_HEADER = 'x-client-ip';

/** Signs a client address for CLIENT_IP_HEADER. */
export function signClientIp(ip: string, secret: string): string {
  return `${ip}.${createHmac('sha256', secret).update(`ip.${ip}`).digest('base64url')}`;
}

/** The address in a CLIENT_IP_HEADER value, or null when it is missing or not signed with `secret`. */
export function verifyClientIp(header: string | string[] | undefined, secret: string): string | null {
  if (typeof header !== 'string') return null;
  const cut = header.lastIndexOf('.');
  if (cut <= 0) return null;
  const ip = header.slice(0, cut);
  const expected = Buffer.from(signClientIp(ip, secret));
  const given = Buffer.from(header);
  return expected.length === given.length && timingSafeEqual(expected, given) ? ip : null;
}

/**
 * The address of the client of an HTTP request. Where TRUST_PROXY says one proxy in front appends
 * the peer it saw to `x-forwarded-for`, that is the last entry (earlier ones are the client's own
 * claims); it must be an IP address. Otherwise, the socket's peer.
 */
export function clientAddress(headers: Record<string, string | string[] | undefined>, socketAddress: string | undefined, trustProxy: boolean): string | null {
  const forwarded = headers['x-forwarded-for'];
  if (trustProxy && typeof forwarded === 'string') {
    const last = forwarded.split(',').at(-1)?.trim() ?? '';
    if (isIP(last)) return last;
  }
  return socketAddress ?? null;
}

/** The header that carries the signed principal from the gateway to the subgraphs. */
export const PRINCIPAL_HEADER = 'x-internal-principal';
const VERSION = 'v1';
const LIFETIME_SECONDS = 60;

const b64 = (value: Buffer | string) => Buffer.from(value).toString('base64url');
const mac = (secret: string, payload: string) => createHmac('sha256', secret).update(`${VERSION}.${payload}`).digest();

/**
 * Who a signed principal is for: `subgraph` (the gateway calling a subgraph) or `gateway` (a
 * subgraph calling the graph). A principal signed for one is refused by the other, so a header
 * seen on an internal hop cannot be replayed against the public gateway.
 */
export type Audience = 'subgraph' | 'gateway';

/** Signs a principal for one internal call: `v1.<payload>.<hmac>`, valid for a minute. */
export function signPrincipal(principal: Principal, secret: string, now = Date.now(), audience: Audience = 'subgraph'): string {
  const iat = Math.floor(now / 1000);
  const payload = b64(JSON.stringify({ p: principal, aud: audience, iat, exp: iat + LIFETIME_SECONDS }));
  return `${VERSION}.${payload}.${b64(mac(secret, payload))}`;
}

/** Verifies a signed principal header; returns null when it is missing, forged, expired or for another audience. */
export function verifyPrincipal(header: string | undefined, secret: string, now = Date.now(), audience: Audience = 'subgraph'): Principal | null {
  if (!header) return null;
  const [version, payload, signature] = header.split('.');
  if (version !== VERSION || !payload || !signature) return null;
  const expected = mac(secret, payload);
  const given = Buffer.from(signature, 'base64url');
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return null;
  try {
    const { p, exp, aud } = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as { p: Principal; exp: number; aud?: string };
    if (typeof exp !== 'number' || exp * 1000 < now || aud !== audience) return null;
    return p;
  } catch {
    return null;
  }
}

/**
 * Mutations whose answer carries a secret (a session token, a JWT, a device secret, a webhook
 * signing secret, a processor token). Their answers are never kept (an Idempotency-Key does not
 * apply to them: a repeat issues another, and the first is never stored outside its own database).
 */
export const CREDENTIAL_ISSUING_FIELDS: ReadonlySet<string> = new Set([
  'login', 'aggregatorGetToken', 'merchantToken', 'customerToken', 'registerDevice', 'submitProspectData', 'configureWebhook', 'saveMerchant', 'addCondorCard',
]);

/**
 * Who a principal is, by kind and id: a user by SvcUserId, an aggregator user by login (logins are
 * unique across aggregators), a merchant, a customer's link, a service by name. Null for anonymous callers.
 */
export function principalActor(principal: Principal | undefined): { kind: Exclude<Principal['kind'], 'anonymous'>; id: string } | null {
  switch (principal?.kind) {
    case 'user':
      return { kind: 'user', id: principal.userId };
    case 'prospect':
      return { kind: 'prospect', id: principal.prospectId };
    case 'aggregator':
      return { kind: 'aggregator', id: principal.login };
    case 'merchant':
      return { kind: 'merchant', id: principal.svcMerchantId };
    case 'customer':
      return { kind: 'customer', id: principal.svcTransactionId };
    case 'service':
      return { kind: 'service', id: principal.service };
    default:
      return null;
  }
}

/**
 * Who a principal is, whatever credential it came with: the same user after logging in again,
 * or a JWT however its signature is spelled, is the same caller. Null for anonymous callers.
 */
export function principalIdentity(principal: Principal | undefined): string | null {
  const actor = principalActor(principal);
  return actor ? `${actor.kind}:${actor.id}` : null;
}
