import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEMO } from '../../platform/domain/demo.js';
import { signJwt } from '../../platform/security/jwt.js';
import { startWebhookReceiver } from '../../scripts/lib/webhook-receiver.js';
import { createLogger } from '../../platform/runtime/logger.js';
import { createNotifier } from '../../platform/messaging/notify.js';
import type { OutboxEvent } from '../../platform/messaging/outbox.js';
import { Deliveries, deliveriesCollection, merchantEndpoints } from '../../subgraphs/payments/src/merchants/deliveries.js';
import {
  PAYMENT_LINK_STATUSES,
  paymentLinksCollection,
  refundsCollection,
  type RefundDocument,
} from '../../subgraphs/payments/src/payment-links/datasource.js';
import { startTestStack, type TestStack } from '../support/harness.js';
import { startInbox, type Inbox } from '../support/inbox.js';

interface Envelope<T> {
  code: string;
  data: T;
  requestId: string;
  message?: string;
  field?: string;
}
interface LinkBody {
  svcTransactionId: string;
  svcMerchantId: string;
  status: string;
  link: string | null;
  url: string | null;
  dtsExpiredAt: string | null;
  amount: number;
  statusChangeHistory: Array<{ initiatorId: string; initiatorType: string; status: string; dtsCreatedAt: string; dtsUpdatedAt: string }>;
}
interface RefundBody {
  svcTransactionId: string;
  svcParentId: string;
  status: string;
  paymentType: string;
  ach: { payment: { DFIAccountNumber: string; amount: number }; result: { status: string } } | null;
  statusChangeHistory: Array<{ _id: string }>;
}
interface ListBody<T> {
  items: T[];
  total: { skipRecords: number; numberOfRecords: number; more: boolean };
}

const ACH_KEY = 'ach-processor-key-0123456789abcdefghij';
const PNG = Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), Buffer.alloc(64, 1)]);

describe('merchants, payment links, refunds and ACH payment webhooks', () => {
  let stack: TestStack;
  let inbox: Inbox;
  let aggregatorToken: string;
  let merchantJwt: string;

  const asAggregator = () => ({ 'x-svc-token': aggregatorToken });
  const asMerchant = (jwt = merchantJwt) => ({ 'x-svc-jwtoken': jwt });
  const create = async (body: Record<string, unknown> = {}, jwt = merchantJwt) => {
    const response = await stack.rest<Envelope<LinkBody>>('POST', '/public/merchant/payment/create', {
      headers: asMerchant(jwt),
      body: {
        payerName: 'Robin Rider',
        invoiceNumber: 'INV-77',
        amount: 120.5,
        currency: 'USD',
        description: 'Wheel truing',
        fields: [{ index: 0, code: 'email', label: 'Email', value: 'robin@example.com' }],
        ...body,
      },
    });
    if (response.status !== 200) throw new Error(JSON.stringify(response.body));
    return response.body.data;
  };
  const send = (id: string, jwt = merchantJwt) =>
    stack.rest<Envelope<LinkBody>>('POST', '/public/merchant/payment/send', { headers: asMerchant(jwt), body: { svcTransactionId: id } });
  const cancel = (id: string, jwt = merchantJwt) =>
    stack.rest<Envelope<LinkBody>>('POST', '/public/merchant/payment/cancel', { headers: asMerchant(jwt), body: { svcTransactionId: id } });
  const merchantToken = async (svcMerchantId: string) =>
    stack.rest<Envelope<{ expiresIn: number; token: string }>>('POST', '/payment-link/merchant/get-token', {
      headers: asAggregator(),
      body: { svcMerchantId },
    });

  beforeAll(async () => {
    inbox = await startInbox();
    stack = await startTestStack({ SMTP_URL: inbox.smtpUrl, SERVICE_KEYS: `ach-processor=${ACH_KEY}` });
    aggregatorToken = (
      await stack.rest<Envelope<{ token: string }>>('POST', '/auth/get-token', {
        body: { user: { login: DEMO.aggregatorLogin, password: DEMO.aggregatorPassword } },
      })
    ).body.data.token;
    merchantJwt = (await merchantToken(DEMO.merchantId)).body.data.token;
  });
  afterAll(async () => {
    await stack.stop();
    await inbox.close();
  });

  describe('merchant JWTs', () => {
    it('issues a merchant JWT for the aggregator’s merchant that lasts 3600 seconds', async () => {
      const response = await merchantToken(DEMO.merchantId);
      expect(response.status).toBe(200);
      expect(response.body).toMatchObject({ code: '0', data: { expiresIn: 3600 } });
      const [, payload] = response.body.data.token.split('.');
      const claims = JSON.parse(Buffer.from(payload!, 'base64url').toString()) as { exp: number; iat: number; typ: string; sub: string };
      expect(claims).toMatchObject({ typ: 'merchant', sub: DEMO.merchantId });
      expect(claims.exp - claims.iat).toBe(3600);
    });

    it('refuses an unknown merchant, a bad id, a confined token and no token', async () => {
      expect((await merchantToken('no_such_merchant')).status).toBe(404);
      const bad = await merchantToken('bad-id!');
      expect(bad.status).toBe(400);
      expect(bad.body.field).toBe('svcMerchantId');
      const tokens = (
        await stack.rest<Envelope<{ tokens: Array<{ token: string; type: string }> }>>('POST', '/auth/get-token', {
          body: { user: { login: DEMO.aggregatorLogin, password: DEMO.aggregatorPassword } },
        })
      ).body.data.tokens;
      const confined = tokens.find((t) => t.type === 'confined')!.token;
      expect(
        (
          await stack.rest('POST', '/payment-link/merchant/get-token', {
            headers: { 'x-svc-token': confined },
            body: { svcMerchantId: DEMO.merchantId },
          })
        ).status,
      ).toBe(403);
      expect((await stack.rest('POST', '/payment-link/merchant/get-token', { body: { svcMerchantId: DEMO.merchantId } })).status).toBe(401);
    });

    it('refuses an expired, a forged and a customer JWT on merchant routes', async () => {
      const expired = await signJwt(
        { typ: 'merchant', sub: DEMO.merchantId, agg: DEMO.aggregatorId },
        stack.config.jwtSecret,
        Date.now() - 3601 * 1000,
      );
      const response = await cancel('demo_link_1', expired);
      expect(response.status).toBe(401);
      expect(response.body).toMatchObject({ code: 'unauthorized' });
      const forged = await signJwt(
        { typ: 'merchant', sub: DEMO.merchantId, agg: DEMO.aggregatorId },
        'not-the-secret-not-the-secret-not-the-secret',
      );
      expect((await cancel('demo_link_1', forged)).status).toBe(401);
      const customer = (
        await stack.rest<Envelope<{ token: string }>>('POST', '/public/customer/payment/link', { body: { link: DEMO.sentLinkCode } })
      ).body.data.token;
      expect((await cancel('demo_link_1', customer)).status).toBe(401);
      expect((await stack.rest('POST', '/public/merchant/payment/cancel', { body: { svcTransactionId: 'demo_link_1' } })).status).toBe(401);
    });

    it('refuses a JWT whose signature is not spelled in canonical base64url: padded, or with trailing bits set', async () => {
      const query = '{ paymentLinks(numberOfRecords: 1) { total { numberOfRecords } } }';
      const ok = await stack.graphql<{ paymentLinks: { total: { numberOfRecords: number } } }>(query, {}, asMerchant());
      expect(ok.body.errors).toBeUndefined();
      const signature = merchantJwt.split('.')[2]!;
      // 32 bytes in 43 characters: the last character's two low bits are padding, zero in the canonical spelling.
      const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
      const last = alphabet.indexOf(signature.at(-1)!);
      expect(last & 3).toBe(0);
      const trailingBits = `${merchantJwt.slice(0, -1)}${alphabet[last | 1]!}`;
      expect(Buffer.from(trailingBits.split('.')[2]!, 'base64url').equals(Buffer.from(signature, 'base64url'))).toBe(true);
      for (const spelled of [
        `${merchantJwt}==`,
        `${merchantJwt}=`,
        trailingBits,
        `${merchantJwt.split('.').slice(0, 2).join('.')}.${Buffer.from(signature, 'base64url').toString('base64')}`,
      ]) {
        if (spelled.split('.')[2] === signature) continue;
        const refused = await stack.graphql(query, {}, asMerchant(spelled));
        expect(refused.body.data?.paymentLinks ?? null, spelled).toBeNull();
        expect(refused.body.errors?.[0]?.extensions?.code, spelled).toBe('UNAUTHENTICATED');
      }
      expect((await cancel('demo_link_1', `${merchantJwt}==`)).status).toBe(401);
    });

    it("lists a merchant's own links, newest first, by status", async () => {
      const created = await create();
      const list = await stack.graphql<{
        paymentLinks: {
          items: Array<{ svcTransactionId: string; svcMerchantId: string; status: string }>;
          total: { numberOfRecords: number };
        };
      }>(
        '{ paymentLinks(status: Initiated, numberOfRecords: 1000) { items { svcTransactionId svcMerchantId status } total { numberOfRecords } } }',
        {},
        asMerchant(),
      );
      const items = list.body.data!.paymentLinks.items;
      expect(items[0]?.svcTransactionId).toBe(created.svcTransactionId);
      expect(items.every((l) => l.svcMerchantId === DEMO.merchantId && l.status === 'Initiated')).toBe(true);
      // A status that is none is refused before the operation runs.
      const bad = await stack.graphql('{ paymentLinks(status: Paid) { total { numberOfRecords } } }', {}, asMerchant());
      expect(bad.body.errors?.[0]).toMatchObject({
        extensions: { code: 'GRAPHQL_VALIDATION_FAILED' },
        message: expect.stringContaining('PaymentLinkStatus') as string,
      });
    });

    it("lets a merchant JWT act only on its own merchant's links", async () => {
      const saved = await stack.graphql<{ saveMerchant: { webhookSecret: string | null; merchant: { svcMerchantId: string } } }>(
        'mutation ($input: MerchantInput!) { saveMerchant(input: $input) { webhookSecret merchant { svcMerchantId } } }',
        { input: { svcMerchantId: 'other_shop', name: 'Other Shop' } },
        asAggregator(),
      );
      expect(saved.body.data?.saveMerchant.webhookSecret).toMatch(/^whsec_/);
      const otherJwt = (await merchantToken('other_shop')).body.data.token;
      const mine = await create();
      expect((await cancel(mine.svcTransactionId, otherJwt)).status).toBe(404);
      expect((await send(mine.svcTransactionId, otherJwt)).status).toBe(404);
      const read = await stack.graphql<{ paymentLink: unknown }>(
        'query ($id: ID) { paymentLink(svcTransactionId: $id) { status } }',
        { id: mine.svcTransactionId },
        asMerchant(otherJwt),
      );
      expect(read.body.data?.paymentLink).toBeNull();
    });
  });

  describe('counts by status', () => {
    const COUNTS = '{ paymentLinkStatusCounts { asOf total statuses { status count } } }';
    interface Counts {
      asOf: string;
      total: number;
      statuses: Array<{ status: string; count: number }>;
    }
    const countsAs = async (headers: Record<string, string>) => {
      const response = await stack.graphql<{ paymentLinkStatusCounts: Counts }>(COUNTS, {}, headers);
      expect(response.body.errors).toBeUndefined();
      return response.body.data!.paymentLinkStatusCounts;
    };
    const countOf = (counts: Counts, status: string) => counts.statuses.find((s) => s.status === status)!.count;

    it("counts the aggregator's merchants' links by status, every status once, as stored", async () => {
      const before = Date.now();
      const counts = await countsAs(asAggregator());
      expect(counts.statuses.map((s) => s.status)).toEqual(PAYMENT_LINK_STATUSES);
      expect(Date.parse(counts.asOf)).toBeGreaterThanOrEqual(before - 1000);
      const stored = await paymentLinksCollection(stack.mongo.db('payments')).find({ svcAggregatorId: DEMO.aggregatorId }).toArray();
      expect(counts.total).toBe(stored.length);
      for (const { status, count } of counts.statuses) expect(count, status).toBe(stored.filter((link) => link.status === status).length);
      // A link created and then sent moves from Initiated to Sent.
      const link = await create();
      const created = await countsAs(asAggregator());
      expect(countOf(created, 'Initiated')).toBe(countOf(counts, 'Initiated') + 1);
      await send(link.svcTransactionId);
      const sent = await countsAs(asAggregator());
      expect([countOf(sent, 'Initiated'), countOf(sent, 'Sent'), sent.total]).toEqual([
        countOf(counts, 'Initiated'),
        countOf(counts, 'Sent') + 1,
        counts.total + 1,
      ]);
    });

    it("counts a merchant's own links only, and none of another aggregator's", async () => {
      await stack.graphql(
        'mutation ($input: MerchantInput!) { saveMerchant(input: $input) { webhookSecret } }',
        { input: { svcMerchantId: 'count_shop', name: 'Count Shop' } },
        asAggregator(),
      );
      const jwt = (await merchantToken('count_shop')).body.data.token;
      await create({}, jwt);
      const own = await countsAs(asMerchant(jwt));
      expect(own.total).toBe(1);
      expect(countOf(own, 'Initiated')).toBe(1);
      const rival = {
        'x-svc-token': await stack.issueToken({
          kind: 'aggregator',
          svcAggregatorId: 'rival_aggregator',
          login: 'rival_ops',
          tokenType: 'base',
        }),
      };
      const none = await countsAs(rival);
      expect(none.total).toBe(0);
      expect(none.statuses.every((s) => s.count === 0)).toBe(true);
    });

    it('refuses anonymous callers, end users and customers', async () => {
      const customer = await signJwt(
        { typ: 'customer', sub: 'demo_link_2', agg: DEMO.aggregatorId, mer: DEMO.merchantId },
        stack.config.jwtSecret,
      );
      const callers: Array<Record<string, string>> = [{}, { token: await stack.loginDemo() }, { 'x-svc-jwtoken': customer }];
      for (const headers of callers) {
        const response = await stack.graphql(COUNTS, {}, headers);
        expect(response.body.errors?.[0]?.extensions?.code).toBe('UNAUTHENTICATED');
        expect(response.body.data ?? null).toBeNull();
      }
    });
  });

  describe('sending and cancelling', () => {
    it('sends an Initiated link: Sent with link, url and dtsExpiredAt, and an email to the customer over SMTP', async () => {
      const link = await create();
      expect(link).toMatchObject({ status: 'Initiated', link: null, url: null, dtsExpiredAt: null });
      const response = await send(link.svcTransactionId);
      expect(response.status).toBe(200);
      const sent = response.body.data;
      expect(sent.status).toBe('Sent');
      expect(sent.link).toMatch(/^[A-Za-z0-9_-]{32}$/);
      expect(sent.url).toContain(`link=${sent.link}`);
      expect(Date.parse(sent.dtsExpiredAt!)).toBeGreaterThan(Date.now() + 6 * 24 * 3600 * 1000);
      expect(sent.statusChangeHistory.map((h) => [h.status, h.initiatorType])).toEqual([
        ['Initiated', 'merchant'],
        ['Sent', 'merchant'],
      ]);
      const mail = inbox.emails.find((m) => m.to === 'robin@example.com' && m.text.includes(sent.link!));
      expect(mail?.text).toContain('Demo Bikes');
      expect(mail?.text).toContain('120.50 USD');
    });

    it('cancels from Initiated, Sent or Processing, appending to the history; any other status is a conflict', async () => {
      const initiated = await create();
      const cancelled = await cancel(initiated.svcTransactionId);
      expect(cancelled.status).toBe(200);
      expect(cancelled.body.data.status).toBe('Cancelled');
      expect(cancelled.body.data.statusChangeHistory.map((h) => h.status)).toEqual(['Initiated', 'Cancelled']);
      const sent = await create();
      await send(sent.svcTransactionId);
      const cancelledSent = await cancel(sent.svcTransactionId);
      expect(cancelledSent.body.data.statusChangeHistory.map((h) => h.status)).toEqual(['Initiated', 'Sent', 'Cancelled']);
      expect((await cancel('demo_link_5')).body.data.status).toBe('Cancelled');
      for (const id of [initiated.svcTransactionId, 'demo_link_6', 'demo_link_4']) {
        const refused = await cancel(id);
        expect(refused.status).toBe(409);
        expect(refused.body).toMatchObject({ code: 'conflict', field: 'svcTransactionId' });
      }
      const resend = await send(initiated.svcTransactionId);
      expect(resend.status).toBe(409);
      expect(resend.body.message).toMatch(/Cancelled/);
    });

    it('lets exactly one of a racing send and cancel win, with one transition in the history', async () => {
      // Sent together over HTTP, the two do not always overlap: when the send has changed the link
      // before the cancel arrives, the cancel applies to the Sent link, as it would one sent later.
      // Every round must be one of the two outcomes, and the race itself must have been seen.
      let raced = 0;
      for (let round = 0; round < 10; round += 1) {
        const link = await create();
        const [a, b] = await Promise.all([send(link.svcTransactionId), cancel(link.svcTransactionId)]);
        const stored = await paymentLinksCollection(stack.mongo.db('payments')).findOne({ _id: link.svcTransactionId });
        if (a.status === 200 && b.status === 200) {
          expect(stored!.statusChangeHistory.map((entry) => entry.status)).toEqual(['Initiated', 'Sent', 'Cancelled']);
          continue;
        }
        raced += 1;
        expect([a.status, b.status].sort()).toEqual([200, 409]);
        expect(stored!.statusChangeHistory).toHaveLength(2);
        expect(stored!.status).toBe(a.status === 200 ? 'Sent' : 'Cancelled');
      }
      expect(raced).toBeGreaterThan(0);
      const twice = await create();
      const sends = await Promise.all([send(twice.svcTransactionId), send(twice.svcTransactionId), send(twice.svcTransactionId)]);
      expect(sends.map((s) => s.status).sort()).toEqual([200, 409, 409]);
    });

    it('refuses a link without an email to send to, and bad link fields, naming the field and storing nothing', async () => {
      const noEmail = await create({ fields: [] });
      const refused = await send(noEmail.svcTransactionId);
      expect(refused.status).toBe(400);
      expect(refused.body.field).toBe('fields');
      expect((await paymentLinksCollection(stack.mongo.db('payments')).findOne({ _id: noEmail.svcTransactionId }))!.status).toBe(
        'Initiated',
      );
      const before = await paymentLinksCollection(stack.mongo.db('payments')).countDocuments();
      for (const [body, field] of [
        [{ amount: -5 }, 'amount'],
        [{ amount: 1.005 }, 'amount'],
        [{ currency: 'usd' }, 'currency'],
        [{ currency: 'XYZ' }, 'currency'],
        [{ amount: 12.5, currency: 'JPY' }, 'amount'],
        [{ invoiceNumber: 'a<b' }, 'invoiceNumber'],
        [{ dueDate: '2020-01-01' }, 'dueDate'],
        [{ fields: [{ code: 'email', value: 'not-an-email' }] }, 'fields[0].value'],
        [{ availablePaymentType: ['cash'] }, 'availablePaymentType[0]'],
      ] as const) {
        const response = await stack.rest<Envelope<null>>('POST', '/public/merchant/payment/create', {
          headers: asMerchant(),
          body: Object.assign({ amount: 10, currency: 'USD' }, body),
        });
        expect(response.status, field).toBe(400);
        expect(response.body.field).toBe(field);
      }
      expect(await paymentLinksCollection(stack.mongo.db('payments')).countDocuments()).toBe(before);
    });

    it('delivers a sent link to the merchant webhook instead of email, signed, with an escaped payment page', async () => {
      const saved = await stack.graphql<{ saveMerchant: { webhookSecret: string } }>(
        'mutation ($input: MerchantInput!) { saveMerchant(input: $input) { webhookSecret } }',
        {
          input: {
            svcMerchantId: 'hook_shop',
            name: 'Hook Shop & "Co"',
            linkDelivery: 'webhook',
            webhookUrl: 'http://127.0.0.1:9/placeholder',
          },
        },
        asAggregator(),
      );
      const receiver = await startWebhookReceiver(saved.body.data!.saveMerchant.webhookSecret);
      try {
        await stack.graphql(
          'mutation ($input: MerchantInput!) { saveMerchant(input: $input) { merchant { webhookUrl } } }',
          { input: { svcMerchantId: 'hook_shop', webhookUrl: receiver.url } },
          asAggregator(),
        );
        const jwt = (await merchantToken('hook_shop')).body.data.token;
        const emailsBefore = inbox.emails.length;
        const link = await create(
          {
            payerName: "O'Brien & Sons",
            description: '<script>alert("x")</script><img src=x onerror=alert(1)>',
            fields: [{ code: 'email', value: 'hook@example.com' }],
          },
          jwt,
        );
        const sent = await send(link.svcTransactionId, jwt);
        expect(sent.status).toBe(200);
        const webhook = receiver.received.find((w) => (w.payload as { type?: string }).type === 'payment_link.sent');
        expect(webhook?.verified).toBe(true);
        const data = (webhook!.payload as { data: { paymentLink: LinkBody; paymentPageHtml: string } }).data;
        expect(data.paymentLink).toMatchObject({ svcTransactionId: link.svcTransactionId, status: 'Sent', link: sent.body.data.link });
        const html = data.paymentPageHtml;
        expect(html).toMatch(/^<!doctype html>/);
        expect(html).not.toContain('<script>');
        expect(html).not.toContain('<img');
        expect(html).toContain('&#60;script&#62;');
        expect(html).toContain('Hook Shop &#38; &#34;Co&#34;');
        expect(html).toContain('O&#39;Brien &#38; Sons');
        expect(html).toContain(`href="${sent.body.data.url!.replace(/[&<>"'`=/]/g, (c) => `&#${c.charCodeAt(0)};`)}"`);
        expect(inbox.emails.slice(emailsBefore).some((m) => m.to === 'hook@example.com')).toBe(false);
        const delivery = await deliveriesCollection(stack.mongo.db('payments')).findOne({ _id: `dlv_${link.svcTransactionId}_sent` });
        expect(delivery).toMatchObject({
          status: 'delivered',
          attemptCount: 1,
          attempts: [{ number: 1, outcome: 'delivered', httpStatus: 200 }],
        });
      } finally {
        await receiver.close();
      }
    });

    it('keeps a failed delivery pending with its error, for retries with backoff', async () => {
      await stack.graphql(
        'mutation ($input: MerchantInput!) { saveMerchant(input: $input) { merchant { webhookUrl } } }',
        { input: { svcMerchantId: 'hook_shop', webhookUrl: 'http://127.0.0.1:9/down' } },
        asAggregator(),
      );
      const jwt = (await merchantToken('hook_shop')).body.data.token;
      const link = await create({}, jwt);
      expect((await send(link.svcTransactionId, jwt)).status).toBe(200);
      const delivery = await deliveriesCollection(stack.mongo.db('payments')).findOne({ _id: `dlv_${link.svcTransactionId}_sent` });
      expect(delivery).toMatchObject({ status: 'pending', attemptCount: 1 });
      expect(delivery!.lastError).toBeTruthy();
      expect(delivery!.dtsNextAttempt!.getTime()).toBeGreaterThan(Date.now() + 3_000);
    });
  });

  describe('the payment page', () => {
    it("serves a sent link's page at its url, as HTML under a strict content security policy", async () => {
      const link = await create({ amount: 19.99 });
      const sent = (await send(link.svcTransactionId)).body.data;
      const page = await stack.restFetch(`/pay?link=${encodeURIComponent(sent.link!)}`);
      expect(page.status).toBe(200);
      expect(page.headers.get('content-type')).toMatch(/^text\/html/);
      expect(page.headers.get('content-security-policy')).toContain("default-src 'none'");
      const html = await page.text();
      expect(html).toContain('19.99 USD');
      expect(html).toContain('Demo Bikes &#38; Repairs');
      await cancel(link.svcTransactionId);
      const gone = await stack.restFetch(`/pay?link=${encodeURIComponent(sent.link!)}`);
      expect(gone.status).toBe(404);
      expect((await stack.restFetch(`/pay`)).status).toBe(400);
    });

    it('does not deliver a sent link after it was cancelled', async () => {
      await stack.graphql(
        'mutation ($input: MerchantInput!) { saveMerchant(input: $input) { merchant { webhookUrl } } }',
        { input: { svcMerchantId: 'late_shop', name: 'Late Shop', linkDelivery: 'webhook', webhookUrl: 'http://127.0.0.1:9/down' } },
        asAggregator(),
      );
      const jwt = (await merchantToken('late_shop')).body.data.token;
      const link = await create({}, jwt);
      await send(link.svcTransactionId, jwt);
      await cancel(link.svcTransactionId, jwt);
      const deliveries = deliveriesCollection(stack.mongo.db('payments'));
      await deliveries.updateOne({ _id: `dlv_${link.svcTransactionId}_sent` }, { $set: { dtsNextAttempt: new Date(0) } });
      const notifier = createNotifier({ mailFrom: 'test@example.com', outboxDir: '/tmp/unused-outbox', logger: createLogger('silent') });
      await new Deliveries(
        stack.mongo.db('payments'),
        notifier,
        createLogger('silent'),
        { scheduleMs: [0], disableAfter: 5, allowInternal: true },
        merchantEndpoints(stack.mongo.db('payments')),
      ).retryDue();
      expect(await deliveries.findOne({ _id: `dlv_${link.svcTransactionId}_sent` })).toMatchObject({
        status: 'failed',
        attemptCount: 1,
        lastError: 'not sent: the link is Cancelled',
      });
    });
  });

  describe('the customer side', () => {
    it('exchanges a sent link for a customer JWT that reads that link only', async () => {
      const response = await stack.rest<Envelope<{ expiresIn: number; token: string }>>('POST', '/public/customer/payment/link', {
        body: { link: DEMO.sentLinkCode },
      });
      expect(response.status).toBe(200);
      expect(response.body.data.expiresIn).toBe(3600);
      const read = await stack.rest<Envelope<{ svcTransactionId: string; status: string; merchant: { name: string }; link?: string }>>(
        'GET',
        '/public/customer/payment',
        { headers: { 'x-svc-jwtoken': response.body.data.token } },
      );
      expect(read.status).toBe(200);
      expect(read.body.data).toMatchObject({ svcTransactionId: 'demo_link_2', merchant: { name: 'Demo Bikes & Repairs' } });
      expect(read.body.data.link).toBeUndefined();
      const other = await stack.graphql<{ paymentLink: unknown }>(
        '{ paymentLink(svcTransactionId: "demo_link_1") { status } }',
        {},
        { 'x-svc-jwtoken': response.body.data.token },
      );
      expect(other.body.data?.paymentLink).toBeNull();
    });

    it('takes the whole link URL as well as its code', async () => {
      const link = await create();
      const sent = (await send(link.svcTransactionId)).body.data;
      const byUrl = await stack.rest<Envelope<{ token: string }>>('POST', '/public/customer/payment/link', { body: { link: sent.url } });
      expect(byUrl.status).toBe(200);
      const read = await stack.rest<Envelope<{ svcTransactionId: string }>>('GET', '/public/customer/payment', {
        headers: { 'x-svc-jwtoken': byUrl.body.data.token },
      });
      expect(read.body.data.svcTransactionId).toBe(link.svcTransactionId);
      const malformed = await stack.rest<Envelope<null>>('POST', '/public/customer/payment/link', { body: { link: 'http://[::1?link=a' } });
      expect(malformed.status).toBe(400);
      expect(malformed.body.field).toBe('link');
    });

    it('refuses an unknown link (404), a cancelled one (409) and an expired one, which becomes Expired', async () => {
      expect((await stack.rest('POST', '/public/customer/payment/link', { body: { link: 'no-such-link' } })).status).toBe(404);
      expect((await stack.rest<Envelope<null>>('POST', '/public/customer/payment/link', { body: {} })).body.field).toBe('link');
      const link = await create();
      const sent = (await send(link.svcTransactionId)).body.data;
      await cancel(link.svcTransactionId);
      expect((await stack.rest('POST', '/public/customer/payment/link', { body: { link: sent.link } })).status).toBe(409);

      const expiring = await create();
      const code = (await send(expiring.svcTransactionId)).body.data.link;
      await paymentLinksCollection(stack.mongo.db('payments')).updateOne(
        { _id: expiring.svcTransactionId },
        { $set: { dtsExpiredAt: new Date(Date.now() - 1000) } },
      );
      const refused = await stack.rest<Envelope<null>>('POST', '/public/customer/payment/link', { body: { link: code } });
      expect(refused.status).toBe(409);
      expect(refused.body.message).toMatch(/Expired/);
      const stored = await paymentLinksCollection(stack.mongo.db('payments')).findOne({ _id: expiring.svcTransactionId });
      expect(stored!.status).toBe('Expired');
      expect(stored!.statusChangeHistory.at(-1)).toMatchObject({ status: 'Expired', initiatorType: 'system' });
      expect((await cancel(expiring.svcTransactionId)).status).toBe(409);
    });
  });

  describe('logos', () => {
    const upload = (type: string, file: Buffer | null, name = 'logo.png', jwt = merchantJwt) => {
      const form = new FormData();
      if (file) form.append('file', new Blob([file]), name);
      return stack
        .restFetch(`/public/merchant/logo/upload/${type}`, { method: 'POST', headers: asMerchant(jwt), body: form })
        .then(async (r) => ({ status: r.status, body: (await r.json()) as Envelope<{ logoId: string }> }));
    };

    it('stores a PNG logo in GridFS and returns its id; a new logo of a type replaces the old', async () => {
      const first = await upload('light', PNG);
      expect(first.status).toBe(200);
      expect(first.body.data.logoId).toMatch(/^logo_/);
      const files = stack.mongo.db('payments').collection('logos.files');
      expect(await files.findOne({ _id: first.body.data.logoId as never })).toMatchObject({
        metadata: { svcMerchantId: DEMO.merchantId, type: 'light', contentType: 'image/png' },
      });
      const second = await upload('light', PNG);
      expect(await files.findOne({ _id: first.body.data.logoId as never })).toBeNull();
      const merchants = await stack.graphql<{ merchants: Array<{ svcMerchantId: string; logos: Record<string, string> }> }>(
        '{ merchants { svcMerchantId logos } }',
        {},
        asAggregator(),
      );
      expect(merchants.body.data!.merchants.find((m) => m.svcMerchantId === DEMO.merchantId)!.logos.light).toBe(second.body.data.logoId);
    });

    it('refuses a file that is not an image by its content, an oversized one, a missing one and an unknown type', async () => {
      const text = await upload('dark', Buffer.from('just text, named like an image'));
      expect(text.status).toBe(415);
      expect(text.body.field).toBe('file');
      expect((await upload('dark', Buffer.concat([PNG, Buffer.alloc(1024 * 1024)]))).status).toBe(413);
      expect((await upload('dark', null)).status).toBe(400);
      const type = await upload('huge', PNG);
      expect(type.status).toBe(400);
      expect(type.body.field).toBe('type');
    });
  });

  describe('POST /payment-link/payment/refund-list', () => {
    const list = (body: Record<string, unknown>) =>
      stack.rest<Envelope<ListBody<RefundBody>>>('POST', '/payment-link/payment/refund-list', { headers: asAggregator(), body });

    it('lists the aggregator’s refunds, newest first, with their ACH payment and result, account numbers masked', async () => {
      const response = await list({});
      expect(response.status).toBe(200);
      expect(response.body.data.total).toEqual({ skipRecords: 0, numberOfRecords: 4, more: false });
      const ach = response.body.data.items.find((r) => r.svcTransactionId === 'demo_refund_2')!;
      expect(ach).toMatchObject({
        svcParentId: 'demo_link_7',
        status: 'Settled',
        paymentType: 'ach',
        ach: { payment: { DFIAccountNumber: '**** 6789', amount: 30 }, result: { status: 'Settled' } },
      });
      expect(ach.statusChangeHistory[0]?._id).toBeTruthy();
      expect(response.body.data.items.find((r) => r.paymentType === 'card')!.ach).toBeNull();
    });

    it('filters by every documented filter', async () => {
      const ids = async (body: Record<string, unknown>) => (await list(body)).body.data.items.map((r) => r.svcTransactionId).sort();
      expect(await ids({ status: 'Settled' })).toEqual(['demo_refund_2']);
      expect(await ids({ paymentType: 'card' })).toEqual(['demo_refund_3']);
      expect(await ids({ svcTransactionId: 'demo_link_8' })).toEqual(['demo_refund_3', 'demo_refund_4']);
      expect(await ids({ svcTransactionIds: ['demo_refund_1', 'demo_refund_4'] })).toEqual(['demo_refund_1', 'demo_refund_4']);
      expect(await ids({ amountFrom: 15, amountTo: 25 })).toEqual(['demo_refund_1', 'demo_refund_3']);
      expect(await ids({ svcMerchantId: DEMO.merchantId, svcMerchantRef: 'INV1005' })).toEqual(['demo_refund_1']);
      expect(await ids({ svcMerchantIds: ['other_shop'] })).toEqual([]);
      const link8 = await paymentLinksCollection(stack.mongo.db('payments')).findOne({ _id: 'demo_link_8' });
      expect(await ids({ payerName: link8!.payerName, invoiceNumber: link8!.invoiceNumber })).toEqual(['demo_refund_3', 'demo_refund_4']);
      expect(await ids({ dueDateFrom: link8!.dueDate, dueDateTo: link8!.dueDate })).toEqual(['demo_refund_3', 'demo_refund_4']);
      const today = new Date().toISOString().slice(0, 10);
      expect(await ids({ dateCreateFrom: today })).toEqual([]);
      expect((await ids({ dateCreateTo: today })).length).toBe(4);
    });

    it('pages with numberOfRecords and skipRecords, telling whether more exist', async () => {
      const first = await list({ numberOfRecords: 3 });
      expect(first.body.data.total).toEqual({ skipRecords: 0, numberOfRecords: 3, more: true });
      const second = await list({ numberOfRecords: 3, skipRecords: 3 });
      expect(second.body.data.total).toEqual({ skipRecords: 3, numberOfRecords: 1, more: false });
      expect(new Set([...first.body.data.items, ...second.body.data.items].map((r) => r.svcTransactionId)).size).toBe(4);
    });

    it('refuses bad filters naming the field', async () => {
      for (const [body, field] of [
        [{ status: 'Paid' }, 'status'],
        [{ paymentType: 'cash' }, 'paymentType'],
        [{ invoiceNumber: '<b>' }, 'invoiceNumber'],
        [{ svcMerchantRef: 'with space' }, 'svcMerchantRef'],
        [{ dateCreateFrom: 'yesterday' }, 'dateCreateFrom'],
        [{ numberOfRecords: 0 }, 'numberOfRecords'],
        [{ skipRecords: -1 }, 'skipRecords'],
        [{ svcTransactionIds: ['ok', 'not ok'] }, 'svcTransactionIds[1]'],
      ] as const) {
        const response = await list(body);
        expect(response.status, field).toBe(400);
        expect(response.body.field).toBe(field);
      }
    });

    it('lists 1,000 refunds with one query of the refunds collection', async () => {
      const refunds = refundsCollection(stack.mongo.db('payments'));
      const template = (await refunds.findOne({ _id: 'demo_refund_2' }))!;
      const docs: RefundDocument[] = Array.from({ length: 1000 }, (_, i) => ({
        ...template,
        _id: `bulk_refund_${i}`,
        svcTransactionId: `bulk_refund_${i}`,
        svcMerchantId: 'bulk_merchant',
        dtsCreatedAt: new Date(Date.now() - i * 1000),
      }));
      for (let i = 0; i < docs.length; i += 50) await refunds.insertMany(docs.slice(i, i + 50));
      stack.mongo.commands.reset();
      const response = await list({ svcMerchantId: 'bulk_merchant', numberOfRecords: 1000 });
      expect(response.body.data.items).toHaveLength(1000);
      const commands = stack.mongo.commands.snapshot(stack.mongo.databaseName('payments'));
      expect(commands['refunds.find']).toBe(1);
      expect(commands['refunds.getMore'] ?? 0).toBeLessThanOrEqual(10);
    });
  });

  describe('refunds', () => {
    const refund = (body: Record<string, unknown>) =>
      stack.rest<Envelope<RefundBody>>('POST', '/public/merchant/payment/refund', { headers: asMerchant(), body });

    it('refunds a Completed link by ACH, masking the account number, and never beyond the amount paid, even racing', async () => {
      // demo_link_6: 145 USD, 20 refunded already.
      const ach = { individualName: 'Robin Rider', routingNumber: '021000021', DFIAccountNumber: '123456789', accountType: 'checking' };
      const first = await refund({ svcTransactionId: 'demo_link_6', amount: 25, paymentType: 'ach', ach });
      expect(first.status).toBe(200);
      expect(first.body.data).toMatchObject({
        svcParentId: 'demo_link_6',
        status: 'Processing',
        paymentType: 'ach',
        ach: { payment: { DFIAccountNumber: '**** 6789', amount: 25 } },
      });
      expect(JSON.stringify(first.body)).not.toContain('123456789');
      const racing = await Promise.all(
        Array.from({ length: 4 }, () => refund({ svcTransactionId: 'demo_link_6', amount: 40, paymentType: 'ach', ach })),
      );
      // 100 of 145 remain refundable: two of four 40s fit.
      expect(racing.map((r) => r.status).sort()).toEqual([200, 200, 409, 409]);
      const stored = await paymentLinksCollection(stack.mongo.db('payments')).findOne({ _id: 'demo_link_6' });
      expect(stored!.refunded).toBe(12_500);
    });

    it('adds refunds exactly where binary fractions would drift, and refunds the rest to the cent', async () => {
      // demo_link_7: 165.00 USD, 30.00 refunded already.
      const refundByGraph = (amount?: string) =>
        stack.graphql<{ refundPaymentLink: { svcTransactionId: string } }>(
          'mutation ($input: RefundInput!) { refundPaymentLink(input: $input) { svcTransactionId } }',
          { input: { svcTransactionId: 'demo_link_7', paymentType: 'card', ...(amount === undefined ? {} : { amount }) } },
          asMerchant(),
        );
      expect(0.1 + 0.2).not.toBe(0.3);
      for (const amount of ['0.10', '0.20']) expect((await refundByGraph(amount)).body.errors).toBeUndefined();
      const tooFine = await refundByGraph('0.001');
      expect(tooFine.body.errors?.[0]?.extensions).toMatchObject({ code: 'VALIDATION_FAILED', field: 'amount' });
      // No amount: the rest, 134.70, computed in cents.
      expect((await refundByGraph()).body.errors).toBeUndefined();
      const stored = await paymentLinksCollection(stack.mongo.db('payments')).findOne({ _id: 'demo_link_7' });
      expect(stored).toMatchObject({ amount: 16_500, refunded: 16_500 });
      expect((await refundByGraph('0.01')).body.errors?.[0]?.extensions).toMatchObject({ code: 'CONFLICT' });
      const link = await stack.graphql<{ paymentLink: { amount: string; currency: string } }>(
        '{ paymentLink(svcTransactionId: "demo_link_7") { amount currency } }',
        {},
        asMerchant(),
      );
      expect(link.body.data?.paymentLink).toEqual({ amount: '165.00', currency: 'USD' });
    });

    it('refuses refunds of links that were not paid, and ACH refunds without their instruction', async () => {
      expect((await refund({ svcTransactionId: 'demo_link_1', amount: 5, paymentType: 'card' })).status).toBe(409);
      const missing = await refund({ svcTransactionId: 'demo_link_8', amount: 5, paymentType: 'ach' });
      expect(missing.status).toBe(400);
      expect(missing.body.field).toBe('ach');
      const routing = await refund({
        svcTransactionId: 'demo_link_8',
        amount: 5,
        paymentType: 'ach',
        ach: { individualName: 'A', routingNumber: '123', DFIAccountNumber: '1234' },
      });
      expect(routing.body.field).toBe('ach.routingNumber');
    });
  });

  describe('ACH payment updates', () => {
    const ach = (query: string, variables: Record<string, unknown>) =>
      stack.graphql<Record<string, { status: string }>>(query, variables, { 'x-service-key': ACH_KEY });

    it("posts each status change to the payment's webhookUrl, signed with the merchant's secret", async () => {
      const receiver = await startWebhookReceiver(DEMO.merchantWebhookSecret);
      try {
        const debit = await ach('mutation ($input: AchDebitInput!) { recordAchDebit(input: $input) { status } }', {
          input: {
            svcTransactionId: 'ach_hooked_1',
            svcAggregatorId: DEMO.aggregatorId,
            svcMerchantId: DEMO.merchantId,
            amount: 80,
            effectiveEntryDate: new Date().toISOString().slice(0, 10),
            webhookUrl: receiver.url,
          },
        });
        expect(debit.body.errors).toBeUndefined();
        await ach('mutation { recordAchSettlement(svcTransactionId: "ach_hooked_1") { status } }', {});
        const settledAgain = await ach('mutation { recordAchSettlement(svcTransactionId: "ach_hooked_1") { status } }', {});
        expect(settledAgain.body.errors?.[0]?.extensions?.code).toBe('CONFLICT');
        await ach('mutation { recordAchReturn(input: { svcTransactionId: "ach_hooked_1", returnCode: "R10" }) { status } }', {});
        const updates = receiver.received.map((w) => w.payload as { type: string; data: { status: string; returnCode: string | null } });
        expect(receiver.received.every((w) => w.verified)).toBe(true);
        expect(updates.map((u) => [u.type, u.data.status, u.data.returnCode])).toEqual([
          ['ach_payment.updated', 'Processing', null],
          ['ach_payment.updated', 'Settled', null],
          ['ach_payment.updated', 'Returned', 'R10'],
        ]);
        const events = await stack.mongo
          .db('payments')
          .collection<OutboxEvent>('outbox')
          .find({ 'payload.svcTransactionId': 'ach_hooked_1' })
          .toArray();
        expect(events.map((e) => e.type).sort()).toEqual(['ach.debit', 'ach.return', 'ach.settled']);
      } finally {
        await receiver.close();
      }
    });

    it("refuses a webhookUrl without a merchant of the payment's aggregator", async () => {
      const response = await ach('mutation ($input: AchDebitInput!) { recordAchDebit(input: $input) { status } }', {
        input: {
          svcTransactionId: 'ach_hooked_2',
          svcAggregatorId: DEMO.aggregatorId,
          amount: 10,
          effectiveEntryDate: '2026-11-20',
          webhookUrl: 'https://example.com/hook',
        },
      });
      expect(response.body.errors?.[0]?.extensions).toMatchObject({ code: 'REQUIRED_ELEMENT_MISSING', field: 'svcMerchantId' });
    });
  });
});
