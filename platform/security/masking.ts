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

/** Query parameters of a connection string that carry a secret (`tlsCertificateKeyFilePassword`, `authMechanismProperties`). */
const SECRET_PARAMETER = /password|secret|token|authmechanismproperties/i;

/**
 * A connection string (MongoDB, Redis) fit to print: without its user and password, and with the
 * values of query parameters that carry a secret replaced. Works on strings `URL` cannot parse,
 * such as a MongoDB replica set's list of hosts.
 */
export function withoutCredentials(uri: string): string {
  // Up to the last `@`: a password written with `/`, `?` or `@` unescaped is cut out all the same.
  const bare = uri.replace(/^([a-z][a-z0-9+.-]*:\/\/).*@/is, '$1');
  const [base = '', query] = bare.split(/\?(.*)/s, 2);
  if (query === undefined) return base;
  const parameters = query
    .split('&')
    .map((parameter) => {
      const [name = '', value] = parameter.split(/=(.*)/s, 2);
      return value !== undefined && SECRET_PARAMETER.test(name) ? `${name}=[redacted]` : parameter;
    })
    .join('&');
  return `${base}?${parameters}`;
}
