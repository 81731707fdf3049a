import { createHmac, timingSafeEqual } from 'node:crypto';
import { isIP } from 'node:net';
import type { Principal } from '../contracts/principal.js';

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
export function clientAddress(
  headers: Record<string, string | string[] | undefined>,
  socketAddress: string | undefined,
  trustProxy: boolean,
): string | null {
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
export function verifyPrincipal(
  header: string | undefined,
  secret: string,
  now = Date.now(),
  audience: Audience = 'subgraph',
): Principal | null {
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
