import { createHmac } from 'node:crypto';
import { jwtVerify, SignJWT, type JWTHeaderParameters } from 'jose';
import { describe, expect, it } from 'vitest';
import { PAYMENT_JWT_LIFETIME_SECONDS, signJwt, verifyJwt, type PaymentJwtClaims } from '../../platform/security/jwt.js';

const SECRET = 'j'.repeat(40);
const KEY = new TextEncoder().encode(SECRET);
const merchant: PaymentJwtClaims = { typ: 'merchant', sub: 'shop_1', agg: 'agg_1' };
const customer: PaymentJwtClaims = { typ: 'customer', sub: 'link_1', agg: 'agg_1', mer: 'shop_1' };
const OUR_HEADER: JWTHeaderParameters = { alg: 'HS256', typ: 'JWT' };

const b64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
const hs256 = (input: string, secret = SECRET) => createHmac('sha256', secret).update(input).digest('base64url');
const partsOf = (token: string) => token.split('.') as [string, string, string];
const nowSeconds = () => Math.floor(Date.now() / 1000);

/** A token made by jose alone, with the claims and header given; the claims may be malformed on purpose. */
function joseToken(claims: Record<string, unknown>, header: JWTHeaderParameters = OUR_HEADER, key: Uint8Array = KEY): Promise<string> {
  return new SignJWT(claims).setProtectedHeader(header).sign(key);
}

/** The claims `signJwt` writes around a payment JWT's own. */
const registered = () => {
  const iat = nowSeconds();
  return { iat, exp: iat + PAYMENT_JWT_LIFETIME_SECONDS, jti: 'jti_1' };
};

describe('payment JWTs made and checked by jose', () => {
  it('signs HS256 with the one header, iat, exp one lifetime later, and a jti per token', async () => {
    const now = Date.now();
    const token = await signJwt(merchant, SECRET, now);
    const [header, payload] = partsOf(token);
    expect(JSON.parse(Buffer.from(header, 'base64url').toString())).toEqual({ alg: 'HS256', typ: 'JWT' });
    const claims = JSON.parse(Buffer.from(payload, 'base64url').toString()) as Record<string, unknown>;
    const iat = Math.floor(now / 1000);
    expect(claims).toEqual({ ...merchant, iat, exp: iat + PAYMENT_JWT_LIFETIME_SECONDS, jti: expect.any(String) as unknown });
    const again = JSON.parse(Buffer.from(partsOf(await signJwt(merchant, SECRET, now))[1], 'base64url').toString()) as { jti: string };
    expect(again.jti).not.toBe(claims.jti);
  });

  it("verifies with jose's own jwtVerify what signJwt signed", async () => {
    const { payload, protectedHeader } = await jwtVerify(await signJwt(customer, SECRET), KEY, {
      algorithms: ['HS256'],
      requiredClaims: ['exp', 'iat', 'jti'],
    });
    expect(protectedHeader).toEqual({ alg: 'HS256', typ: 'JWT' });
    expect(payload).toMatchObject(customer);
  });

  it("verifies a token jose's SignJWT made with the same claims, and one the earlier hand-written signer made", async () => {
    expect(await verifyJwt(await joseToken({ ...merchant, ...registered() }), SECRET)).toEqual(merchant);
    expect(await verifyJwt(await joseToken({ ...customer, ...registered() }), SECRET)).toEqual(customer);
    // Tokens issued before the change stay valid until they expire.
    const input = `${b64(OUR_HEADER)}.${b64({ ...merchant, ...registered() })}`;
    expect(await verifyJwt(`${input}.${hs256(input)}`, SECRET)).toEqual(merchant);
  });

  it('refuses alg none, HS512, and any header other than the one signJwt writes', async () => {
    const claims = { ...merchant, ...registered() };
    const none = `${b64({ alg: 'none', typ: 'JWT' })}.${b64(claims)}.`;
    expect(await verifyJwt(none, SECRET)).toBeNull();
    // `none` under our own header's text, with the signature left off.
    expect(await verifyJwt(`${b64(OUR_HEADER)}.${b64(claims)}.`, SECRET)).toBeNull();
    expect(await verifyJwt(await joseToken(claims, { alg: 'HS512', typ: 'JWT' }), SECRET)).toBeNull();
    // Signed with the right key and alg, but a header that is not ours.
    expect(await verifyJwt(await joseToken(claims, { alg: 'HS256' }), SECRET)).toBeNull();
    expect(await verifyJwt(await joseToken(claims, { alg: 'HS256', typ: 'JWT', kid: 'k1' }), SECRET)).toBeNull();
  });

  it('refuses a missing exp or one not a number, an exp that has come, another secret, and claims of neither kind', async () => {
    const { iat, jti } = registered();
    expect(await verifyJwt(await joseToken({ ...merchant, iat, jti }), SECRET)).toBeNull();
    expect(await verifyJwt(await joseToken({ ...merchant, iat, jti, exp: String(iat + 60) }), SECRET)).toBeNull();
    expect(await verifyJwt(await signJwt(merchant, SECRET, Date.now() - 3601 * 1000), SECRET)).toBeNull();
    // No clock tolerance: valid until the second of exp, refused from it.
    const issued = Date.now();
    const token = await signJwt(merchant, SECRET, issued, 60);
    const exp = (Math.floor(issued / 1000) + 60) * 1000;
    expect(await verifyJwt(token, SECRET, exp - 1)).toEqual(merchant);
    expect(await verifyJwt(token, SECRET, exp)).toBeNull();
    expect(await verifyJwt(await signJwt(merchant, 'k'.repeat(40)), SECRET)).toBeNull();
    for (const claims of [
      { typ: 'admin', sub: 'shop_1', agg: 'agg_1' },
      { typ: 'customer', sub: 'link_1', agg: 'agg_1' },
      { typ: 'merchant', sub: 7, agg: 'agg_1' },
      { typ: 'merchant', sub: 'shop_1' },
    ])
      expect(await verifyJwt(await joseToken({ ...claims, ...registered() }), SECRET), JSON.stringify(claims)).toBeNull();
  });

  it('refuses a payload changed after signing', async () => {
    const [header, payload, signature] = partsOf(await signJwt(merchant, SECRET));
    const claims = JSON.parse(Buffer.from(payload, 'base64url').toString()) as Record<string, unknown>;
    for (const tampered of [
      { ...claims, sub: 'shop_2' },
      { ...claims, exp: Number(claims.exp) + 3600 },
      { ...claims, typ: 'customer', mer: 'shop_1' },
    ])
      expect(await verifyJwt(`${header}.${b64(tampered)}.${signature}`, SECRET)).toBeNull();
  });

  it('refuses every spelling of a valid token but the canonical one, in the signature and in the payload', async () => {
    const token = await signJwt(merchant, SECRET);
    expect(await verifyJwt(token, SECRET)).toEqual(merchant);
    const [header, payload, signature] = partsOf(token);
    // A 32-byte HMAC takes 43 characters: the last one's two low bits are padding, zero when canonical.
    const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
    const last = alphabet.indexOf(signature.at(-1)!);
    expect(last & 3).toBe(0);
    const trailingBits = `${signature.slice(0, -1)}${alphabet[last | 1]!}`;
    expect(Buffer.from(trailingBits, 'base64url').equals(Buffer.from(signature, 'base64url'))).toBe(true);
    const signatures = [
      `${signature}=`,
      `${signature}==`,
      trailingBits,
      Buffer.from(signature, 'base64url').toString('base64'),
      `${signature.slice(0, 20)} ${signature.slice(20)}`,
    ];
    for (const spelled of signatures) {
      expect(spelled).not.toBe(signature);
      expect(await verifyJwt(`${header}.${payload}.${spelled}`, SECRET), spelled).toBeNull();
    }
    // A payload spelled otherwise is signed over its own text: signed correctly, it is still refused.
    for (const spelled of [`${payload}=`, `${payload.slice(0, 10)} ${payload.slice(10)}`]) {
      const input = `${header}.${spelled}`;
      expect(Buffer.from(spelled, 'base64url').equals(Buffer.from(payload, 'base64url'))).toBe(true);
      expect(await verifyJwt(`${input}.${hs256(input)}`, SECRET), spelled).toBeNull();
    }
  });
});
