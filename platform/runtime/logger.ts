import type { LogLevel } from './config.js';

const LEVELS: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40, silent: 100 };

/** Keys whose values never reach a log line, whatever object they sit in. */
const SECRET_KEYS = /^(password|oldpassword|newpassword|token|tokens|x-svc-token|x-svc-jwtoken|authorization|cookie|secret|serversecret|signature|cryptotext|accountnumber|num|pan|destinationpan|x-internal-principal)$/i;

/** An opaque token as the services issue them (32 random bytes, base64url), anywhere in a text. */
const OPAQUE_TOKEN = /(?<![A-Za-z0-9_-])[A-Za-z0-9_-]{43}(?![A-Za-z0-9_-])/g;

/** An unexpected error's text may print an object that holds a token: the token is cut out. */
const scrubbed = (text: string | undefined) => text?.replace(OPAQUE_TOKEN, '[redacted]');

function redact(value: unknown, depth = 0): unknown {
  if (depth > 6 || value === null || typeof value !== 'object') return value;
  if (value instanceof Error) return { name: value.name, message: scrubbed(value.message), stack: scrubbed(value.stack) };
  if (Array.isArray(value)) return value.map((item) => redact(item, depth + 1));
  // Keys may come from a client: on a plain object, `__proto__` would set the prototype, not a field.
  const out = Object.create(null) as Record<string, unknown>;
  for (const [key, item] of Object.entries(value)) {
    out[key] = SECRET_KEYS.test(key) ? '[redacted]' : redact(item, depth + 1);
  }
  return out;
}

/** A JSON-lines logger; `child` binds fields (service, requestId) to every line it writes. */
export interface Logger {
  debug(msg: string, fields?: Record<string, unknown>): void;
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
  child(bindings: Record<string, unknown>): Logger;
}

/** Creates a logger writing one JSON object per line to stdout, with secrets redacted. */
export function createLogger(level: LogLevel, bindings: Record<string, unknown> = {}, write: (line: string) => void = (line) => process.stdout.write(line)): Logger {
  const threshold = LEVELS[level];
  const log = (lvl: Exclude<LogLevel, 'silent'>, msg: string, fields?: Record<string, unknown>) => {
    if (LEVELS[lvl] < threshold) return;
    const line = { time: new Date().toISOString(), level: lvl, ...bindings, msg, ...(fields ? (redact(fields) as object) : {}) };
    write(`${JSON.stringify(line)}\n`);
  };
  return {
    debug: (msg, fields) => log('debug', msg, fields),
    info: (msg, fields) => log('info', msg, fields),
    warn: (msg, fields) => log('warn', msg, fields),
    error: (msg, fields) => log('error', msg, fields),
    child: (more) => createLogger(level, { ...bindings, ...more }, write),
  };
}
