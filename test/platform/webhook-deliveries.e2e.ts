import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { createClient } from 'graphql-ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { DEMO } from '../../platform/domain/demo.js';
import { verifyWebhook } from '../../scripts/lib/webhook-receiver.js';
import { deliveriesCollection } from '../../subgraphs/payments/src/merchants/deliveries.js';
import { startTestStack, until, type TestStack } from '../support/harness.js';

interface Envelope<T> {
  code: string;
  data: T;
}
interface Hit {
  id: string;
  verified: boolean;
  at: number;
  type: string;
}
const PROCESSOR_KEY = 'card-processor-key-for-the-delivery-tests';

/** A merchant webhook endpoint whose answers the test scripts: a list of statuses (and Retry-After), then 200. */
async function startEndpoint(secret: () => string) {
  const hits: Hit[] = [];
  let script: Array<{ status: number; retryAfter?: string }> = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      hits.push({
        id: String(req.headers['webhook-id']),
        verified: verifyWebhook(secret(), req.headers, body),
        at: Date.now(),
        type: String((JSON.parse(body) as { type?: string }).type),
      });
      const next = script.shift() ?? { status: 200 };
      res.writeHead(next.status, next.retryAfter ? { 'retry-after': next.retryAfter } : {}).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
    hits,
    answer: (statuses: Array<{ status: number; retryAfter?: string }>) => void (script = [...statuses]),
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

describe('webhook deliveries: schedule, log, resend and disabled endpoints', () => {
  let stack: TestStack;
  let aggregatorToken: string;
  let secret = '';
  let endpoint: Awaited<ReturnType<typeof startEndpoint>>;

  const asAggregator = () => ({ 'x-svc-token': aggregatorToken });
  const saveMerchant = async (input: Record<string, unknown>) =>
    (
      await stack.graphql<{ saveMerchant: { webhookSecret: string | null } }>(
        'mutation ($input: MerchantInput!) { saveMerchant(input: $input) { webhookSecret } }',
        { input },
        asAggregator(),
      )
    ).body.data!.saveMerchant;
  const sendLink = async (svcMerchantId: string) => {
    const jwt = (
      await stack.rest<Envelope<{ token: string }>>('POST', '/payment-link/merchant/get-token', {
        headers: asAggregator(),
        body: { svcMerchantId },
      })
    ).body.data.token;
    const link = (
      await stack.rest<Envelope<{ svcTransactionId: string }>>('POST', '/public/merchant/payment/create', {
        headers: { 'x-svc-jwtoken': jwt },
        body: { amount: 10, currency: 'USD' },
      })
    ).body.data;
    const sent = await stack.rest('POST', '/public/merchant/payment/send', {
      headers: { 'x-svc-jwtoken': jwt },
      body: { svcTransactionId: link.svcTransactionId },
    });
    expect(sent.status).toBe(200);
    return `dlv_${link.svcTransactionId}_sent`;
  };
  const delivery = (id: string) => deliveriesCollection(stack.mongo.db('payments')).findOne({ _id: id });

  beforeAll(async () => {
    endpoint = await startEndpoint(() => secret);
    stack = await startTestStack({
      WEBHOOK_RETRY_SCHEDULE: '0,100ms,100ms,100ms',
      WEBHOOK_DISABLE_AFTER: '6',
      SERVICE_KEYS: `card-processor=${PROCESSOR_KEY}`,
    });
    aggregatorToken = (
      await stack.rest<Envelope<{ token: string }>>('POST', '/auth/get-token', {
        body: { user: { login: DEMO.aggregatorLogin, password: DEMO.aggregatorPassword } },
      })
    ).body.data.token;
    secret = (await saveMerchant({ svcMerchantId: 'hooked', name: 'Hooked', linkDelivery: 'webhook', webhookUrl: endpoint.url }))
      .webhookSecret!;
  });
  afterAll(async () => {
    await stack.stop();
    await endpoint.close();
  });

  it('retries a receiver that fails three times, then delivers once, with the same webhook-id and a valid signature each time', async () => {
    const wsUrl = `${stack.gateway.url.replace('http', 'ws')}/graphql`;
    const client = createClient({ url: wsUrl, webSocketImpl: WebSocket, connectionParams: asAggregator(), retryAttempts: 0 });
    const attempts: Array<{ outcome: string; number: number }> = [];
    const stop = client.subscribe<{
      webhookDeliveryAttempted: { deliveryId: string; attempts: Array<{ number: number; outcome: string }> };
    }>(
      { query: 'subscription { webhookDeliveryAttempted { deliveryId attempts { number outcome } } }' },
      {
        next: (value) => {
          const last = value.data?.webhookDeliveryAttempted.attempts.at(-1);
          if (last) attempts.push(last);
        },
        error: () => {},
        complete: () => {},
      },
    );
    await new Promise((resolve) => setTimeout(resolve, 300));
    endpoint.hits.length = 0;
    endpoint.answer([{ status: 500 }, { status: 502 }, { status: 500 }]);
    const id = await sendLink('hooked');
    const done = await until(
      () => delivery(id),
      (d) => d?.status === 'delivered',
    );
    expect(done!.attempts.map((a) => [a.number, a.outcome, a.httpStatus])).toEqual([
      [1, 'failed', 500],
      [2, 'failed', 502],
      [3, 'failed', 500],
      [4, 'delivered', 200],
    ]);
    expect(endpoint.hits).toHaveLength(4);
    expect(new Set(endpoint.hits.map((h) => h.id))).toEqual(new Set([id]));
    expect(endpoint.hits.every((h) => h.verified)).toBe(true);
    await until(
      async () => attempts.length,
      (n) => n >= 4,
    );
    expect(attempts.map((a) => a.outcome)).toEqual(['failed', 'failed', 'failed', 'delivered']);
    stop();
    await client.dispose();
  });

  it("waits as long as a receiver's Retry-After asks, beyond the schedule", async () => {
    endpoint.hits.length = 0;
    endpoint.answer([{ status: 503, retryAfter: '1' }]);
    const id = await sendLink('hooked');
    const done = await until(
      () => delivery(id),
      (d) => d?.status === 'delivered',
    );
    expect(done!.attempts).toHaveLength(2);
    expect(endpoint.hits[1]!.at - endpoint.hits[0]!.at).toBeGreaterThanOrEqual(950);
  });

  it('gives up after the schedule, shows the log in GraphQL, and sends a failed delivery again by mutation', async () => {
    endpoint.answer([{ status: 500 }, { status: 500 }, { status: 500 }, { status: 500 }]);
    const id = await sendLink('hooked');
    const failed = await until(
      () => delivery(id),
      (d) => d?.status === 'failed',
    );
    expect(failed!.attemptCount).toBe(4);
    const log = await stack.graphql<{
      deliveries: { items: Array<{ deliveryId: string; status: string; eventType: string; attempts: unknown[] }> };
    }>(
      '{ deliveries(status: failed) { items { deliveryId status eventType attempts { number outcome httpStatus durationMs } } } }',
      {},
      asAggregator(),
    );
    expect(log.body.data!.deliveries.items.find((d) => d.deliveryId === id)).toMatchObject({
      status: 'failed',
      eventType: 'payment_link.sent',
    });
    const resent = await stack.graphql<{ resendDelivery: { status: string; attempts: Array<{ outcome: string }> } }>(
      'mutation ($id: ID!) { resendDelivery(deliveryId: $id) { status attempts { outcome } } }',
      { id },
      asAggregator(),
    );
    expect(resent.body.data!.resendDelivery).toMatchObject({ status: 'delivered' });
    expect(resent.body.data!.resendDelivery.attempts.map((a) => a.outcome)).toEqual(['failed', 'failed', 'failed', 'failed', 'delivered']);
    const again = await stack.graphql('mutation ($id: ID!) { resendDelivery(deliveryId: $id) { status } }', { id }, asAggregator());
    expect(again.body.errors?.[0]?.extensions?.code).toBe('CONFLICT');
  });

  it('disables an endpoint after a run of failures, pauses its deliveries, and resumes them when enabled', async () => {
    endpoint.answer(Array.from({ length: 6 }, () => ({ status: 500 })));
    const first = await sendLink('hooked');
    await until(
      () => delivery(first),
      (d) => d?.status === 'failed',
    );
    const second = await sendLink('hooked');
    // Six failures in a row (four, then two): disabled on the sixth; the rest of the second pauses.
    const paused = await until(
      () => delivery(second),
      (d) => d?.status === 'paused',
    );
    expect(paused!.attemptCount).toBe(2);
    const merchant = await stack.graphql<{ merchants: Array<{ svcMerchantId: string; dtsWebhookDisabled: string | null }> }>(
      '{ merchants { svcMerchantId dtsWebhookDisabled } }',
      {},
      asAggregator(),
    );
    expect(merchant.body.data!.merchants.find((m) => m.svcMerchantId === 'hooked')!.dtsWebhookDisabled).toBeTruthy();
    const third = await sendLink('hooked');
    expect(
      (await until(
        () => delivery(third),
        (d) => d?.status === 'paused',
      ))!.attemptCount,
    ).toBe(0);
    await stack.graphql('mutation { enableMerchantWebhook(svcMerchantId: "hooked") { dtsWebhookDisabled } }', {}, asAggregator());
    await until(
      () => delivery(second),
      (d) => d?.status === 'delivered',
    );
    await until(
      () => delivery(third),
      (d) => d?.status === 'delivered',
    );
  });

  it("delivers card-authorization advices to the aggregator's webhook through the same log, retried until delivered", async () => {
    const cardEndpoint = await startEndpoint(() => DEMO.webhook.secret);
    try {
      await stack.mongo
        .db('cards')
        .collection('webhookConfigs')
        .updateOne({ _id: DEMO.aggregatorId as never }, { $set: { url: cardEndpoint.url } });
      cardEndpoint.answer([{ status: 500 }, { status: 503 }]);
      const advice = async (stan: string) => {
        const decided = await stack.graphql<{ authorizeCardMessage: { messageId: string } }>(
          'mutation ($input: CardMessageInput!) { authorizeCardMessage(input: $input) { messageId } }',
          {
            input: {
              messageType: '0220',
              svcCardId: DEMO.cardIds[0],
              amount: 7.25,
              currency: 'USD',
              merchantName: 'Parking',
              mcc: '7523',
              stan,
              rrn: `RRN000${stan}`,
            },
          },
          { 'x-service-key': PROCESSOR_KEY },
        );
        expect(decided.body.errors).toBeUndefined();
        return decided.body.data!.authorizeCardMessage;
      };
      const id = `dlv_${(await advice('990011')).messageId}_advice`;
      const log = async (deliveryId: string) =>
        (
          await stack.graphql<{
            cardWebhookDeliveries: {
              items: Array<{
                deliveryId: string;
                status: string;
                eventType: string;
                attempts: Array<{ outcome: string; httpStatus: number | null }>;
              }>;
            };
          }>('{ cardWebhookDeliveries { items { deliveryId status eventType attempts { outcome httpStatus } } } }', {}, asAggregator())
        ).body.data!.cardWebhookDeliveries.items.find((d) => d.deliveryId === deliveryId);
      const done = await until(
        () => log(id),
        (d) => d?.status === 'delivered',
      );
      expect(done).toMatchObject({
        eventType: 'card_authorization.advice',
        attempts: [
          { outcome: 'failed', httpStatus: 500 },
          { outcome: 'failed', httpStatus: 503 },
          { outcome: 'delivered', httpStatus: 200 },
        ],
      });
      expect(cardEndpoint.hits).toHaveLength(3);
      expect(new Set(cardEndpoint.hits.map((h) => h.id))).toEqual(new Set([id]));
      expect(cardEndpoint.hits.every((h) => h.verified)).toBe(true);

      // Given up after the schedule, then sent again by the aggregator.
      cardEndpoint.answer([{ status: 500 }, { status: 500 }, { status: 500 }, { status: 500 }]);
      const failedId = `dlv_${(await advice('990012')).messageId}_advice`;
      await until(
        async () => (await log(failedId))?.status,
        (status) => status === 'failed',
      );
      const resent = await stack.graphql<{ resendCardWebhookDelivery: { status: string } }>(
        'mutation ($id: ID!) { resendCardWebhookDelivery(deliveryId: $id) { status } }',
        { id: failedId },
        asAggregator(),
      );
      expect(resent.body.data?.resendCardWebhookDelivery.status).toBe('delivered');
      const unknown = await stack.graphql('mutation { resendCardWebhookDelivery(deliveryId: "dlv_nope") { status } }', {}, asAggregator());
      expect(unknown.body.errors?.[0]?.extensions).toMatchObject({ code: 'NOT_FOUND', field: 'deliveryId' });

      // A disabled endpoint pauses advices until the aggregator enables it.
      await stack.mongo
        .db('cards')
        .collection('webhookConfigs')
        .updateOne({ _id: DEMO.aggregatorId as never }, { $set: { dtsWebhookDisabled: new Date() } });
      const pausedId = `dlv_${(await advice('990013')).messageId}_advice`;
      await until(
        async () => (await log(pausedId))?.status,
        (status) => status === 'paused',
      );
      const enabled = await stack.graphql<{ enableCardWebhook: boolean }>('mutation { enableCardWebhook }', {}, asAggregator());
      expect(enabled.body.data?.enableCardWebhook).toBe(true);
      await until(
        async () => (await log(pausedId))?.status,
        (status) => status === 'delivered',
      );
      const badStatus = await stack.graphql('{ cardWebhookDeliveries(status: lost) { total { numberOfRecords } } }', {}, asAggregator());
      expect(badStatus.body.errors?.[0]).toMatchObject({
        extensions: { code: 'GRAPHQL_VALIDATION_FAILED' },
        message: expect.stringContaining('DeliveryStatus') as string,
      });
    } finally {
      await cardEndpoint.close();
    }
  });

  it('resumes a pending delivery that a stopped process left behind', async () => {
    endpoint.answer([]);
    const id = await sendLink('hooked');
    await until(
      () => delivery(id),
      (d) => d?.status === 'delivered',
    );
    // As if a process had stored this delivery and died before attempting it.
    const orphan = {
      ...(await delivery(id))!,
      _id: 'dlv_orphan',
      status: 'pending' as const,
      attemptCount: 0,
      attempts: [],
      dtsNextAttempt: new Date(Date.now() - 1000),
      dtsDelivered: null,
    };
    await deliveriesCollection(stack.mongo.db('payments')).insertOne(orphan);
    const resumed = await until(
      () => delivery('dlv_orphan'),
      (d) => d?.status === 'delivered',
      12_000,
    );
    expect(resumed!.attemptCount).toBe(1);
  });
});
