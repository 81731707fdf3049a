import { pino, type Logger as PinoLogger } from 'pino';
import { withoutTokens } from '../security/masking.js';
import { activeTraceIds } from '../telemetry/tracing.js';
import type { LogLevel } from './config.js';

/** Keys whose values never reach a log line, whatever object they sit in. */
const SECRET_KEYS =
  /^(password|oldpassword|newpassword|token|tokens|x-svc-token|x-svc-jwtoken|authorization|cookie|secret|serversecret|signature|cryptotext|accountnumber|num|pan|destinationpan|x-internal-principal)$/i;

/** An unexpected error's text may print an object that holds a token: the token is cut out. */
const scrubbed = withoutTokens;

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

function wrap(base: PinoLogger): Logger {
  return {
    debug: (msg, fields) => base.debug(fields ?? {}, msg),
    info: (msg, fields) => base.info(fields ?? {}, msg),
    warn: (msg, fields) => base.warn(fields ?? {}, msg),
    error: (msg, fields) => base.error(fields ?? {}, msg),
    child: (more) => wrap(base.child(more)),
  };
}

/**
 * Creates a pino logger writing one JSON object per line (stdout by default), with secrets
 * redacted and the active trace's `traceId` and `spanId` on every line written inside one.
 * Redaction is by key at any depth, in pino's log formatter: pino's redaction paths name fixed
 * positions, and a client's body may nest a secret anywhere.
 */
export function createLogger(level: LogLevel, bindings: Record<string, unknown> = {}, write?: (line: string) => void): Logger {
  const base = pino(
    {
      level,
      base: undefined,
      messageKey: 'msg',
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: {
        level: (label) => ({ level: label }),
        log: (fields) => redact(fields) as Record<string, unknown>,
      },
      mixin: activeTraceIds,
    },
    write ? { write } : pino.destination(1),
  );
  return wrap(Object.keys(bindings).length > 0 ? base.child(bindings) : base);
}
