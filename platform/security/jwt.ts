import { jwtVerify, SignJWT, type JWTPayload } from 'jose';
import { newId } from './secrets.js';

/** The claims of the payment-link JWTs: a merchant's, or a customer's for one link. */
export type PaymentJwtClaims = { typ: 'merchant'; sub: string; agg: string } | { typ: 'customer'; sub: string; agg: string; mer: string };

/** Lifetime of merchant and customer JWTs (the aggregator spec: 3600 seconds). */
export const PAYMENT_JWT_LIFETIME_SECONDS = 3600;

const PROTECTED_HEADER = { alg: 'HS256', typ: 'JWT' };
/** The only header `verifyJwt` accepts: the one `signJwt` writes. */
const HEADER = Buffer.from(JSON.stringify(PROTECTED_HEADER)).toString('base64url');

/** Each secret's key bytes, encoded once: the gateway verifies with the same secret on every request. */
const keys = new Map<string, Uint8Array>();
function keyOf(secret: string): Uint8Array {
  let key = keys.get(secret);
  if (!key) {
    key = new TextEncoder().encode(secret);
    keys.set(secret, key);
  }
  return key;
}

/** Whether a part is spelled as base64url spells its bytes: no `=` padding, no whitespace, trailing bits zero. */
const canonical = (part: string) => Buffer.from(part, 'base64url').toString('base64url') === part;

/** Signs an HS256 JWT with `iat`, `exp` and a `jti`. */
export function signJwt(
  claims: PaymentJwtClaims,
  secret: string,
  now = Date.now(),
  lifetimeSeconds = PAYMENT_JWT_LIFETIME_SECONDS,
): Promise<string> {
  const iat = Math.floor(now / 1000);
  return new SignJWT({ ...claims })
    .setProtectedHeader(PROTECTED_HEADER)
    .setIssuedAt(iat)
    .setExpirationTime(iat + lifetimeSeconds)
    .setJti(newId())
    .sign(keyOf(secret));
}

/**
 * Verifies an HS256 JWT signed by `signJwt`: exactly this header (no `alg` negotiation, so `none`
 * or an RSA key confusion cannot pass), every part spelled in canonical base64url, a valid
 * signature and an `exp` in the future. Returns the claims, or null.
 */
export async function verifyJwt(token: string, secret: string, now = Date.now()): Promise<PaymentJwtClaims | null> {
  const parts = token.split('.');
  // jose's decoder forgives `=` padding, whitespace and a changed last character, so one signature
  // would have several spellings, each a different token string for the same credential.
  if (parts.length !== 3 || parts[0] !== HEADER || !parts.every(canonical)) return null;
  let claims: JWTPayload;
  try {
    ({ payload: claims } = await jwtVerify(token, keyOf(secret), {
      algorithms: ['HS256'],
      requiredClaims: ['exp', 'sub', 'agg'],
      currentDate: new Date(now),
    }));
  } catch {
    return null;
  }
  if (typeof claims.sub !== 'string' || typeof claims.agg !== 'string') return null;
  if (claims.typ === 'merchant') return { typ: 'merchant', sub: claims.sub, agg: claims.agg };
  if (claims.typ === 'customer' && typeof claims.mer === 'string')
    return { typ: 'customer', sub: claims.sub, agg: claims.agg, mer: claims.mer };
  return null;
}
