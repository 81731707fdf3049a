import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

/** A new device secret: 32 random bytes, base64url. */
export function newDeviceSecret(): string {
  return randomBytes(32).toString('base64url');
}

const hmac = (secret: string, text: string) => createHmac('sha256', secret).update(text).digest('base64url');

/** The android channel's signature: `<unix ms>.<base64url HMAC-SHA256(secret, "android\n" + uuid + "\n" + deviceTagOpen + "\n" + ms)>`. */
export function androidSignature(secret: string, uuid: string, deviceTagOpen: string, atMs: number): string {
  return `${atMs}.${hmac(secret, `android\n${uuid.toLowerCase()}\n${deviceTagOpen}\n${atMs}`)}`;
}

/** The cryptotext of android_v1, ios_v1 and mobile: base64url HMAC-SHA256(secret, channel + "\n" + deviceTag + "\n" + dtsValueString). */
export function deviceCryptotext(secret: string, channel: string, deviceTag: string, dtsValueString: string): string {
  return hmac(secret, `${channel}\n${deviceTag}\n${dtsValueString}`);
}

function sameText(a: string, b: string): boolean {
  const left = Buffer.from(a);
  const right = Buffer.from(b);
  return left.length === right.length && timingSafeEqual(left, right);
}

/** Checks an android signature; returns its time stamp when the MAC is right, else null. */
export function verifyAndroidSignature(secret: string, uuid: string, deviceTagOpen: string, signature: string): number | null {
  const [ms, mac] = signature.split('.');
  const atMs = Number(ms);
  if (!mac || !Number.isSafeInteger(atMs)) return null;
  return sameText(androidSignature(secret, uuid, deviceTagOpen, atMs), signature) ? atMs : null;
}

/** Checks a cryptotext in constant time. */
export function verifyCryptotext(secret: string, channel: string, deviceTag: string, dtsValueString: string, cryptotext: string): boolean {
  return sameText(deviceCryptotext(secret, channel, deviceTag, dtsValueString), cryptotext);
}
