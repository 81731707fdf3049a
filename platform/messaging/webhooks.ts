import { randomBytes } from 'node:crypto';
import { appError, ErrorCode } from '../contracts/errors.js';
import { lookup } from 'node:dns/promises';
import { Agent, request as httpRequest } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import { BlockList, isIP, type LookupFunction } from 'node:net';
import { Webhook } from 'standardwebhooks';
import { newId } from '../security/secrets.js';

/** A new signing secret in the Standard Webhooks form: `whsec_` and 32 random bytes, base64. */
export function newWebhookSecret(): string {
  return `whsec_${randomBytes(32).toString('base64')}`;
}

/**
 * The Standard Webhooks signature (`v1,` and base64 HMAC-SHA256 of `<id>.<timestamp>.<body>`,
 * keyed by the secret after `whsec_`), made by the specification's own library rather than by
 * hand. `timestamp` is in seconds, as sent in `webhook-timestamp`.
 */
export function signWebhook(secret: string, id: string, timestamp: number, body: string): string {
  return new Webhook(secret).sign(id, new Date(timestamp * 1000), body);
}

/**
 * IPv4 ranges a webhook must not reach in production: every range of IANA's special-purpose
 * registry that is not globally reachable (loopback, private, shared, link-local, documentation,
 * benchmarking, the 6to4 relay, multicast, reserved and broadcast).
 */
const INTERNAL_IPV4 = new BlockList();
for (const [net, prefix] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.0.2.0', 24],
  ['192.88.99.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['198.51.100.0', 24],
  ['203.0.113.0', 24],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
] as const)
  INTERNAL_IPV4.addSubnet(net, prefix, 'ipv4');

/**
 * IPv6 ranges refused whole: the unspecified and loopback addresses with the deprecated
 * IPv4-compatible ones (::/96), local-use NAT64, discard-only, the IETF protocol assignments
 * (2001::/23: Teredo, benchmarking, ORCHID), documentation, 6to4 (2002::/16, which tunnels to
 * the IPv4 address it embeds), SRv6, unique-local, link-local, site-local and multicast. Tunnel
 * prefixes are refused rather than decoded: where a tunnel ends up is not the address's to say.
 */
const INTERNAL_IPV6 = new BlockList();
for (const [net, prefix] of [
  ['::', 96],
  ['64:ff9b:1::', 48],
  ['100::', 64],
  ['100:0:0:1::', 64],
  ['2001::', 23],
  ['2001:db8::', 32],
  ['2002::', 16],
  ['3fff::', 20],
  ['5f00::', 16],
  ['fc00::', 7],
  ['fe80::', 10],
  ['fec0::', 10],
  ['ff00::', 8],
] as const)
  INTERNAL_IPV6.addSubnet(net, prefix, 'ipv6');

/** The 16 bytes of an IPv6 address (a trailing dotted IPv4 part and a zone allowed), or null. */
function ipv6Bytes(address: string): number[] | null {
  let text = address.replace(/%.*$/, '');
  const dotted = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text);
  if (dotted) {
    const [a, b, c, d] = dotted.slice(1).map(Number) as [number, number, number, number];
    text = `${text.slice(0, dotted.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const halves = text.split('::');
  if (halves.length > 2) return null;
  const groups = (half: string | undefined) => (half ? half.split(':') : []);
  const head = groups(halves[0]);
  const tail = groups(halves[1]);
  const all = halves.length === 2 ? [...head, ...Array<string>(8 - head.length - tail.length).fill('0'), ...tail] : head;
  if (all.length !== 8 || all.some((group) => !/^[0-9a-f]{1,4}$/i.test(group))) return null;
  return all.flatMap((group) => {
    const value = parseInt(group, 16);
    return [value >> 8, value & 0xff];
  });
}

const startsWith = (bytes: number[], prefix: readonly number[]) => prefix.every((byte, i) => bytes[i] === byte);
/** ::ffff:0:0/96 (IPv4-mapped), ::ffff:0:0:0/96 (IPv4-translated) and 64:ff9b::/96 (NAT64): the last four bytes are an IPv4 address, reached as such. */
const EMBEDDING_IPV4: ReadonlyArray<readonly number[]> = [
  [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff],
  [0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0, 0],
  [0, 0x64, 0xff, 0x9b, 0, 0, 0, 0, 0, 0, 0, 0],
];

/**
 * Whether an address is one a webhook must not reach: an internal IPv4 address, an IPv6 address
 * that embeds one (IPv4-mapped, IPv4-translated, NAT64: judged by the IPv4 address, so a NAT64
 * network still reaches public receivers), or one of the IPv6 ranges refused whole (6to4, Teredo,
 * IPv4-compatible among them). What is not an address at all counts as internal.
 */
export function isInternalAddress(address: string): boolean {
  const family = isIP(address.replace(/%.*$/, ''));
  if (family === 4) return INTERNAL_IPV4.check(address, 'ipv4');
  if (family !== 6) return true;
  const bytes = ipv6Bytes(address);
  if (!bytes) return true;
  if (EMBEDDING_IPV4.some((prefix) => startsWith(bytes, prefix))) return INTERNAL_IPV4.check(bytes.slice(12).join('.'), 'ipv4');
  const canonical = Array.from({ length: 8 }, (_, i) => ((bytes[2 * i]! << 8) | bytes[2 * i + 1]!).toString(16)).join(':');
  return INTERNAL_IPV6.check(canonical, 'ipv6');
}

/** The addresses a host name resolves to (an IP literal is its own). */
async function addressesOf(hostname: string): Promise<Array<{ address: string; family: number }>> {
  const host = hostname.replace(/^\[|\]$/g, '');
  const family = isIP(host);
  return family ? [{ address: host, family }] : lookup(host, { all: true });
}

/** Whether every address a host name resolves to is outside the internal ranges. */
async function resolvesOutside(hostname: string): Promise<boolean> {
  const addresses = await addressesOf(hostname);
  return addresses.length > 0 && addresses.every(({ address }) => !isInternalAddress(address));
}

/** The largest reply body read from a webhook receiver. */
const MAX_REPLY_BYTES = 64 * 1024;

/**
 * POSTs to a URL, connecting to `pinned` (an address already checked) instead of resolving the
 * host again, so a DNS answer that changes between the check and the call (rebinding) cannot
 * redirect it inward. TLS still verifies the certificate against the URL's host name.
 */
export function postPinned(
  url: URL,
  headers: Record<string, string>,
  body: string,
  signal: AbortSignal,
  pinned: { address: string; family: number } | null,
): Promise<{ status: number; retryAfter: string | null; text: string }> {
  const attempt = (fresh: boolean) =>
    new Promise<{ status: number; retryAfter: string | null; text: string }>((resolve, reject) => {
      const request = (url.protocol === 'https:' ? httpsRequest : httpRequest)(
        url,
        {
          method: 'POST',
          headers: { ...headers, 'content-length': String(Buffer.byteLength(body)) },
          signal,
          ...(fresh ? { agent: false, ...(pinned ? { lookup: pinnedLookup(pinned) } : {}) } : { agent: agentFor(url, pinned) }),
        },
        (response) => {
          const chunks: Buffer[] = [];
          let size = 0;
          response.on('data', (chunk: Buffer) => {
            size += chunk.length;
            if (size <= MAX_REPLY_BYTES) chunks.push(chunk);
          });
          response.on('end', () => {
            const retryAfter = response.headers['retry-after'];
            resolve({
              status: response.statusCode ?? 0,
              retryAfter: typeof retryAfter === 'string' ? retryAfter : null,
              text: Buffer.concat(chunks).toString('utf8'),
            });
          });
          response.on('error', reject);
        },
      );
      request.on('error', (error: NodeJS.ErrnoException) => {
        // A kept-alive connection reset as it was reused: mostly a receiver closing an idle
        // connection before reading the request. It is sent once more, on a connection of its own;
        // a receiver that did read the first copy drops this one by its webhook-id (Standard Webhooks).
        if (!fresh && request.reusedSocket && (error.code === 'ECONNRESET' || error.code === 'EPIPE') && !signal.aborted)
          resolve(attempt(true));
        else reject(error);
      });
      request.end(body);
    });
  return attempt(false);
}

/** A DNS lookup that answers the address already checked, whatever the host name. */
function pinnedLookup(pinned: { address: string; family: number }): LookupFunction {
  return ((_host: string, options: { all?: boolean }, callback: (error: null, address: unknown, family?: number) => void) =>
    options.all ? callback(null, [pinned]) : callback(null, pinned.address, pinned.family)) as unknown as LookupFunction;
}

/**
 * Keep-alive connection pools to webhook receivers, one per origin and checked address, so that
 * a pooled connection always goes to the address the delivery checked (and a sandbox or an
 * authorization does not pay a new TCP and TLS handshake per message). Least recently used first
 * out; idle connections close after 4 s, before the 5 s keep-alive of Node's own servers.
 */
const receiverPools = new Map<string, Agent>();
const MAX_RECEIVER_POOLS = 256;

function agentFor(url: URL, pinned: { address: string; family: number } | null): Agent {
  const key = `${url.protocol}//${url.host}|${pinned?.address ?? ''}`;
  const pool = receiverPools.get(key);
  if (pool) {
    receiverPools.delete(key);
    receiverPools.set(key, pool);
    return pool;
  }
  const options = { keepAlive: true, timeout: 4_000, ...(pinned ? { lookup: pinnedLookup(pinned) } : {}) };
  const created = url.protocol === 'https:' ? new HttpsAgent(options) : new Agent(options);
  receiverPools.set(key, created);
  if (receiverPools.size > MAX_RECEIVER_POOLS) {
    const [oldestKey, oldest] = receiverPools.entries().next().value!;
    receiverPools.delete(oldestKey);
    // Its idle connections close now; those in use finish their delivery and then time out.
    for (const sockets of Object.values(oldest.freeSockets)) for (const socket of sockets ?? []) socket.destroy();
  }
  return created;
}

/** A `Retry-After` value (seconds, or an HTTP date) in milliseconds from now; undefined when absent or unreadable. */
function parseRetryAfter(value: string | null, now = Date.now()): number | undefined {
  if (!value) return undefined;
  if (/^\d+$/.test(value.trim())) return Number(value.trim()) * 1000;
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

/** How one delivery went. */
export type WebhookOutcome =
  /** `retryAfterMs`: the receiver's `Retry-After`, when it sent one. */
  | { kind: 'reply'; status: number; body: unknown; ms: number; retryAfterMs?: number }
  | { kind: 'timeout'; ms: number }
  | { kind: 'unreachable'; message: string; ms: number };

/**
 * Sends one signed webhook (headers webhook-id, webhook-timestamp, webhook-signature) and waits
 * up to `timeoutMs` for the reply, whose JSON body (if any) is returned.
 */
export async function deliverWebhook(
  target: { url: string; secret: string },
  payload: unknown,
  timeoutMs: number,
  options: { allowInternal: boolean; id?: string } = { allowInternal: false },
): Promise<WebhookOutcome> {
  const id = options.id ?? newId('msg_');
  const body = JSON.stringify(payload);
  const timestamp = Math.floor(Date.now() / 1000);
  const started = performance.now();
  const elapsed = () => Math.round((performance.now() - started) * 10) / 10;
  try {
    // A webhook is an outside party: unless configuration allows internal targets (development),
    // a URL that resolves to loopback, private or link-local addresses is not called, and the
    // call goes to the address checked.
    const url = new URL(target.url);
    let pinned: { address: string; family: number } | null = null;
    if (!options.allowInternal) {
      const addresses = await addressesOf(url.hostname);
      if (addresses.length === 0 || addresses.some(({ address }) => isInternalAddress(address))) {
        return { kind: 'unreachable', message: 'the webhook URL resolves to an internal address', ms: elapsed() };
      }
      pinned = addresses[0]!;
    }
    // A redirect is a reply of its own (not followed): it carries no responseCode.
    const response = await postPinned(
      url,
      {
        'content-type': 'application/json',
        'webhook-id': id,
        'webhook-timestamp': String(timestamp),
        'webhook-signature': signWebhook(target.secret, id, timestamp, body),
      },
      body,
      AbortSignal.timeout(timeoutMs),
      pinned,
    );
    const text = response.text;
    let parsed: unknown = null;
    try {
      parsed = text === '' ? null : JSON.parse(text);
    } catch {
      parsed = text;
    }
    const retryAfterMs = parseRetryAfter(response.retryAfter);
    return { kind: 'reply', status: response.status, body: parsed, ms: elapsed(), ...(retryAfterMs === undefined ? {} : { retryAfterMs }) };
  } catch (error) {
    const name = (error as Error).name;
    if (name === 'TimeoutError' || name === 'AbortError') return { kind: 'timeout', ms: elapsed() };
    return { kind: 'unreachable', message: (error as Error).message, ms: elapsed() };
  }
}

/**
 * Checks a webhook URL when it is configured: an absolute http(s) URL and, unless configuration
 * allows internal targets (development, tests), https to a host that resolves only to public
 * addresses. Deliveries check the address again, since DNS may change after configuration.
 */
export async function checkWebhookTarget(value: string, field: string, allowInternal: boolean): Promise<string> {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw appError(ErrorCode.VALIDATION_FAILED, `${field} must be an absolute http(s) URL.`, { field });
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:')
    throw appError(ErrorCode.VALIDATION_FAILED, `${field} must be an http(s) URL.`, { field });
  if (!allowInternal) {
    if (url.protocol !== 'https:') throw appError(ErrorCode.VALIDATION_FAILED, `${field} must be an https URL.`, { field });
    let outside: boolean;
    try {
      outside = await resolvesOutside(url.hostname);
    } catch {
      throw appError(ErrorCode.VALIDATION_FAILED, `${field}: the host ${url.hostname} does not resolve.`, { field });
    }
    if (!outside)
      throw appError(
        ErrorCode.VALIDATION_FAILED,
        `${field} must not point at a loopback, private or link-local address, nor another special-purpose one (an IPv6 form embedding such an IPv4 address included).`,
        { field },
      );
  }
  return url.toString();
}
