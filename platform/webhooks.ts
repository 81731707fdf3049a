import { createHmac, randomBytes } from 'node:crypto';
import { newId } from './secrets.js';

/** A new signing secret in the Standard Webhooks form: `whsec_` and 32 random bytes, base64. */
export function newWebhookSecret(): string {
  return `whsec_${randomBytes(32).toString('base64')}`;
}

/**
 * The Standard Webhooks signature: `v1,` and base64 HMAC-SHA256 of `<id>.<timestamp>.<body>`,
 * keyed by the base64-decoded part of the secret after `whsec_`.
 */
export function signWebhook(secret: string, id: string, timestamp: number, body: string): string {
  const key = Buffer.from(secret.startsWith('whsec_') ? secret.slice(6) : secret, 'base64');
  return `v1,${createHmac('sha256', key).update(`${id}.${timestamp}.${body}`).digest('base64')}`;
}

/** How one delivery went. */
export type WebhookOutcome =
  | { kind: 'reply'; status: number; body: unknown; ms: number }
  | { kind: 'timeout'; ms: number }
  | { kind: 'unreachable'; message: string; ms: number };

/**
 * Sends one signed webhook (headers webhook-id, webhook-timestamp, webhook-signature) and waits
 * up to `timeoutMs` for the reply, whose JSON body (if any) is returned.
 */
export async function deliverWebhook(target: { url: string; secret: string }, payload: unknown, timeoutMs: number, id = newId('msg_')): Promise<WebhookOutcome> {
  const body = JSON.stringify(payload);
  const timestamp = Math.floor(Date.now() / 1000);
  const started = performance.now();
  const elapsed = () => Math.round((performance.now() - started) * 10) / 10;
  try {
    const response = await fetch(target.url, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'webhook-id': id,
        'webhook-timestamp': String(timestamp),
        'webhook-signature': signWebhook(target.secret, id, timestamp, body),
      },
      body,
      // A redirect is a reply of its own (not followed): it carries no responseCode.
      redirect: 'manual',
      signal: AbortSignal.timeout(timeoutMs),
    });
    const text = await response.text();
    let parsed: unknown = null;
    try {
      parsed = text === '' ? null : JSON.parse(text);
    } catch {
      parsed = text;
    }
    return { kind: 'reply', status: response.status, body: parsed, ms: elapsed() };
  } catch (error) {
    const name = (error as Error).name;
    if (name === 'TimeoutError' || name === 'AbortError') return { kind: 'timeout', ms: elapsed() };
    return { kind: 'unreachable', message: (error as Error).message, ms: elapsed() };
  }
}
