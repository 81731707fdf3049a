import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook, WebhookVerificationError } from 'standardwebhooks';

/** What an aggregator's endpoint does with a card-authorization webhook. */
/** How the receiver answers: a responseCode (after `delayMs`, to hold requests in flight), silence, or an HTTP status. */
export type ReceiverMode = { reply: string; delayMs?: number } | { silent: true } | { status: number };

/** A webhook the receiver got, with whether its Standard Webhooks signature verified. */
export interface ReceivedWebhook {
  id: string;
  verified: boolean;
  payload: Record<string, unknown>;
}

/**
 * Checks the Standard Webhooks headers of a request body against the secret with the
 * specification's own library, which also refuses a timestamp outside its tolerance. A secret the
 * library cannot read throws: that is a mistake in the receiver, not a bad webhook.
 */
export function verifyWebhook(secret: string, headers: http.IncomingHttpHeaders, body: string): boolean {
  const webhook = new Webhook(secret);
  const header = (name: string) => {
    const value = headers[name];
    return typeof value === 'string' ? value : '';
  };
  try {
    webhook.verify(
      body,
      {
        'webhook-id': header('webhook-id'),
        'webhook-timestamp': header('webhook-timestamp'),
        'webhook-signature': header('webhook-signature'),
      },
      // Only the signature is judged here; the receiver reads the body itself.
      { jsonParse: false },
    );
    return true;
  } catch (error) {
    if (error instanceof WebhookVerificationError) return false;
    throw error;
  }
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
