import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { timingSafeEqual } from 'node:crypto';
import { signWebhook } from '../../platform/messaging/webhooks.js';

/** What an aggregator's endpoint does with a card-authorization webhook. */
/** How the receiver answers: a responseCode (after `delayMs`, to hold requests in flight), silence, or an HTTP status. */
export type ReceiverMode = { reply: string; delayMs?: number } | { silent: true } | { status: number };

/** A webhook the receiver got, with whether its Standard Webhooks signature verified. */
export interface ReceivedWebhook {
  id: string;
  verified: boolean;
  payload: Record<string, unknown>;
}

/** Checks the Standard Webhooks headers of a request body against the secret, within five minutes. */
export function verifyWebhook(secret: string, headers: http.IncomingHttpHeaders, body: string): boolean {
  const id = headers['webhook-id'];
  const timestamp = Number(headers['webhook-timestamp']);
  const signatures = String(headers['webhook-signature'] ?? '').split(' ');
  if (typeof id !== 'string' || !Number.isInteger(timestamp) || Math.abs(Date.now() / 1000 - timestamp) > 300) return false;
  const expected = Buffer.from(signWebhook(secret, id, timestamp, body));
  return signatures.some((candidate) => {
    const given = Buffer.from(candidate);
    return given.length === expected.length && timingSafeEqual(given, expected);
  });
}

/**
 * A local aggregator endpoint for card-authorization webhooks: verifies each signature, records
 * the webhook and answers by `mode` (a responseCode, silence, or an HTTP status). Used by the tests
 * and by `npm run webhook-receiver` for trying the sandbox by hand.
 */
export async function startWebhookReceiver(secret: string, port = 0, host = '127.0.0.1', onWebhook?: (webhook: ReceivedWebhook) => void) {
  const received: ReceivedWebhook[] = [];
  let mode: ReceiverMode = { reply: '00' };
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      const webhook = {
        id: String(req.headers['webhook-id']),
        verified: verifyWebhook(secret, req.headers, body),
        payload: JSON.parse(body) as Record<string, unknown>,
      };
      received.push(webhook);
      onWebhook?.(webhook);
      if (!webhook.verified) return void res.writeHead(401).end();
      if ('silent' in mode) return;
      if ('status' in mode) return void res.writeHead(mode.status).end();
      const sandbox = webhook.payload.sandbox as { expect?: string } | undefined;
      // An endpoint that follows the sandbox's hint declines when asked to.
      const code = sandbox?.expect === 'decline' && mode.reply === '00' ? '05' : mode.reply;
      const answer = () => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ responseCode: code }));
      if (mode.delayMs) setTimeout(answer, mode.delayMs);
      else answer();
    });
  });
  await new Promise<void>((resolve) => server.listen(port, host, () => resolve()));
  return {
    url: `http://${host}:${(server.address() as AddressInfo).port}/webhooks`,
    received,
    setMode: (next: ReceiverMode) => {
      mode = next;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
