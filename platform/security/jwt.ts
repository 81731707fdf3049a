import { createHmac, timingSafeEqual } from 'node:crypto';
import { newId } from './secrets.js';

/** The claims of the payment-link JWTs: a merchant's, or a customer's for one link. */
export type PaymentJwtClaims = { typ: 'merchant'; sub: string; agg: string } | { typ: 'customer'; sub: string; agg: string; mer: string };

/** Lifetime of merchant and customer JWTs (the aggregator spec: 3600 seconds). */
export const PAYMENT_JWT_LIFETIME_SECONDS = 3600;

const HEADER = Buffer.from(JSON.stringify({ alg: 'HS256', typ: 'JWT' })).toString('base64url');
const mac = (secret: string, input: string) => createHmac('sha256', secret).update(input).digest();

/** Signs an HS256 JWT with `iat`, `exp` and a `jti`. */
export function signJwt(
  claims: PaymentJwtClaims,
  secret: string,
  now = Date.now(),
  lifetimeSeconds = PAYMENT_JWT_LIFETIME_SECONDS,
): string {
  const iat = Math.floor(now / 1000);
  const payload = Buffer.from(JSON.stringify({ ...claims, iat, exp: iat + lifetimeSeconds, jti: newId() })).toString('base64url');
  return `${HEADER}.${payload}.${mac(secret, `${HEADER}.${payload}`).toString('base64url')}`;
}

/**
 * Verifies an HS256 JWT signed by `signJwt`: exactly this header (no `alg` negotiation, so `none`
 * or an RSA key confusion cannot pass), a valid signature spelled exactly as `signJwt` spells it
 * (canonical base64url) and an `exp` in the future. Returns the
 * claims, or null.
 */
export function verifyJwt(token: string, secret: string, now = Date.now()): PaymentJwtClaims | null {
  const parts = token.split('.');
  if (parts.length !== 3 || parts[0] !== HEADER) return null;
  // The signature's text is compared with the canonical spelling (base64url, no padding, trailing
  // bits zero): a decoder forgives `==` or a changed last character, so one signature would have
  // several spellings, each a different token string for the same credential.
  const expected = Buffer.from(mac(secret, `${parts[0]}.${parts[1]}`).toString('base64url'), 'latin1');
  const given = Buffer.from(parts[2]!, 'latin1');
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return null;
  try {
    const claims = JSON.parse(Buffer.from(parts[1]!, 'base64url').toString('utf8')) as Record<string, unknown>;
    if (typeof claims.exp !== 'number' || claims.exp * 1000 <= now) return null;
    if (typeof claims.sub !== 'string' || typeof claims.agg !== 'string') return null;
    if (claims.typ === 'merchant') return { typ: 'merchant', sub: claims.sub, agg: claims.agg };
    if (claims.typ === 'customer' && typeof claims.mer === 'string')
      return { typ: 'customer', sub: claims.sub, agg: claims.agg, mer: claims.mer };
    return null;
  } catch {
    return null;
  }
}
