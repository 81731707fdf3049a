import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook, WebhookVerificationError } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deliverWebhook, newWebhookSecret, signWebhook } from '../../platform/messaging/webhooks.js';
import { startWebhookReceiver, verifyWebhook } from '../../scripts/lib/webhook-receiver.js';

/** A request as it arrived: its headers (the string ones) and its body, unparsed. */
interface Arrival {
  headers: Record<string, string>;
  body: string;
}

/** A local endpoint that keeps each request for the test to verify, and answers 204. */
async function startRecorder() {
  const arrivals: Arrival[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const headers = Object.fromEntries(
        Object.entries(req.headers).filter((entry): entry is [string, string] => typeof entry[1] === 'string'),
      );
      arrivals.push({ headers, body: Buffer.concat(chunks).toString('utf8') });
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
    arrivals,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

describe('webhook signatures, byte for byte', () => {
  const id = 'msg_fixed-id-for-the-known-value';
  const body = '{"type":"card.authorization","amount":"12.34","merchantName":"Café Ünïcode ✓"}';
  // Computed by the hand-written HMAC signer before the library replaced it.
  const known = 'v1,frDkZm0GYnneHd01LxWjw4cAFBOd26uKzmK01DO8rOM=';

  it('signs fixed inputs as the hand-written signer did, with or without the whsec_ prefix', () => {
    expect(signWebhook('whsec_ZGVtby13ZWJob29rLXNlY3JldC1mb3ItdGhlLXNhbmRib3g=', id, 1700000000, body)).toBe(known);
    expect(signWebhook('ZGVtby13ZWJob29rLXNlY3JldC1mb3ItdGhlLXNhbmRib3g=', id, 1700000000, body)).toBe(known);
  });

  it("matches the signature in the library's own test", () => {
    expect(signWebhook('whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw', 'msg_p5jXN8AQM9LWM0D4loKWxJek', 1614265330, '{"test": 2432232314}')).toBe(
      'v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=',
    );
  });

  it('generates secrets the library takes: whsec_ and a base64 key of 32 bytes', () => {
    const secret = newWebhookSecret();
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(Buffer.from(secret.slice('whsec_'.length), 'base64')).toHaveLength(32);
    const now = new Date();
    expect(new Webhook(secret).sign('msg_x', now, '{}')).toBe(signWebhook(secret, 'msg_x', Math.floor(now.getTime() / 1000), '{}'));
  });
});

describe('Standard Webhooks interoperability: the library and our code, over HTTP', () => {
  const secret = newWebhookSecret();
  const payload = { type: 'payment_link.status_changed', data: { amount: '12.34', note: 'Café ✓' } };
  let recorder: Awaited<ReturnType<typeof startRecorder>>;
  let receiver: Awaited<ReturnType<typeof startWebhookReceiver>>;
  let delivered: Arrival;

  beforeAll(async () => {
    recorder = await startRecorder();
    receiver = await startWebhookReceiver(secret);
    const outcome = await deliverWebhook({ url: recorder.url, secret }, payload, 2000, { allowInternal: true, id: 'msg_interop' });
    expect(outcome).toMatchObject({ kind: 'reply', status: 204 });
    delivered = recorder.arrivals[0]!;
  });
  afterAll(async () => {
    await recorder.close();
    await receiver.close();
  });

  it('has the library verify a delivery we sent, from the headers and body that arrived', () => {
    expect(delivered.headers['webhook-id']).toBe('msg_interop');
    expect(Number(delivered.headers['webhook-timestamp'])).toBeCloseTo(Date.now() / 1000, -1);
    expect(delivered.headers['webhook-signature']).toMatch(/^v1,[A-Za-z0-9+/]{43}=$/);
    expect(new Webhook(secret).verify(delivered.body, delivered.headers)).toEqual(payload);
    expect(new Webhook(secret.slice('whsec_'.length)).verify(delivered.body, delivered.headers)).toEqual(payload);
  });

  it('verifies, in the receiver the tests use, a webhook the library signed', async () => {
    const body = JSON.stringify({ hello: 'from the library', at: new Date().toISOString() });
    const headers = {
      'content-type': 'application/json',
      'webhook-id': 'msg_from-the-library',
      'webhook-timestamp': String(Math.floor(Date.now() / 1000)),
      'webhook-signature': new Webhook(secret).sign('msg_from-the-library', new Date(), body),
    };
    const response = await fetch(receiver.url, { method: 'POST', headers, body });
    expect(response.status).toBe(200);
    expect(receiver.received.at(-1)).toMatchObject({ id: 'msg_from-the-library', verified: true, payload: { hello: 'from the library' } });
    expect(verifyWebhook(secret, headers, body)).toBe(true);
  });

  it('has the receiver the tests use refuse what the library signed with another secret', async () => {
    const body = JSON.stringify({ hello: 'from someone else' });
    const headers = {
      'content-type': 'application/json',
      'webhook-id': 'msg_other-secret',
      'webhook-timestamp': String(Math.floor(Date.now() / 1000)),
      'webhook-signature': new Webhook(newWebhookSecret()).sign('msg_other-secret', new Date(), body),
    };
    const response = await fetch(receiver.url, { method: 'POST', headers, body });
    expect(response.status).toBe(401);
    expect(receiver.received.at(-1)).toMatchObject({ id: 'msg_other-secret', verified: false });
  });

  it('has the library refuse a tampered body, a wrong secret, and a timestamp outside its tolerance', () => {
    const tampered = delivered.body.replace('12.34', '99.34');
    expect(tampered).not.toBe(delivered.body);
    expect(() => new Webhook(secret).verify(tampered, delivered.headers)).toThrow(WebhookVerificationError);
    expect(() => new Webhook(newWebhookSecret()).verify(delivered.body, delivered.headers)).toThrow(WebhookVerificationError);
    const id = delivered.headers['webhook-id']!;
    for (const offset of [-600, 600]) {
      const timestamp = Math.floor(Date.now() / 1000) + offset;
      const headers = {
        ...delivered.headers,
        'webhook-timestamp': String(timestamp),
        'webhook-signature': signWebhook(secret, id, timestamp, delivered.body),
      };
      expect(() => new Webhook(secret).verify(delivered.body, headers), `offset ${offset}`).toThrow(WebhookVerificationError);
      expect(verifyWebhook(secret, headers, delivered.body), `offset ${offset}`).toBe(false);
    }
    expect(verifyWebhook(secret, { ...delivered.headers }, tampered)).toBe(false);
    expect(verifyWebhook(newWebhookSecret(), delivered.headers, delivered.body)).toBe(false);
    expect(verifyWebhook(secret, delivered.headers, delivered.body)).toBe(true);
  });
});
