/** Shows only the last four characters of a number: `**** 1234`. */
export function maskLastFour(lastFour: string | null | undefined): string | null {
  return lastFour ? `**** ${lastFour}` : null;
}

/** An opaque token as the services issue them (32 random bytes, base64url), anywhere in a text. */
const OPAQUE_TOKEN = /(?<![A-Za-z0-9_-])[A-Za-z0-9_-]{43}(?![A-Za-z0-9_-])/g;

/** A text (an unexpected error's message or stack, which may print an object holding a token) with every token cut out. */
export function withoutTokens(text: string): string;
export function withoutTokens(text: string | undefined): string | undefined;
export function withoutTokens(text: string | undefined): string | undefined {
  return text?.replace(OPAQUE_TOKEN, '[redacted]');
}
