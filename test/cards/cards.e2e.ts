import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEMO } from '../../platform/domain/demo.js';
import { startWebhookReceiver } from '../../scripts/lib/webhook-receiver.js';
import { usersCollection } from '../../subgraphs/user/src/profile/datasource.js';
import { startTestStack, until, type TestStack } from '../support/harness.js';
import { cardMessages, PROCESSOR_KEY } from '../support/card-messages.js';

interface CardBody {
  SvcCardId: string;
  name: string | null;
  isMain: boolean;
  status: string;
  isActive: boolean;
  num: string;
}
interface StatusBody {
  success: boolean;
  status: string;
  isActive: boolean;
  card: CardBody;
  userId: string;
  error?: { code: string };
}
interface Decision {
  responseCode: string;
  approved: boolean;
  decidedBy: string;
  transactionId: string | null;
  decisionMs: number;
}

const { message } = cardMessages(100000, 'RRN', { messageType: '0100', amount: 25 });

describe('cards, card authorization and the webhook sandbox', () => {
  let stack: TestStack;
  let token: string;
  let receiver: Awaited<ReturnType<typeof startWebhookReceiver>>;
  let aggregatorToken: string;

  const authorize = async (input: Record<string, unknown>) => {
    const response = await stack.graphql<{ authorizeCardMessage: Decision }>(
      'mutation ($input: CardMessageInput!) { authorizeCardMessage(input: $input) { responseCode approved decidedBy reason transactionId decisionMs } }',
      { input },
      { 'x-service-key': PROCESSOR_KEY },
    );
    if (response.body.errors) throw new Error(JSON.stringify(response.body.errors));
    return response.body.data!.authorizeCardMessage;
  };
  const onoff = (card: string, to: 'on' | 'off', as = token) =>
    stack.rest<StatusBody>('POST', `/cards/${card}/${to}`, { headers: { token: as } });

  beforeAll(async () => {
    receiver = await startWebhookReceiver(DEMO.webhook.secret);
    stack = await startTestStack({ SERVICE_KEYS: `card-processor=${PROCESSOR_KEY}` });
    await stack.mongo
      .db('cards')
      .collection('webhookConfigs')
      .updateOne({ _id: DEMO.aggregatorId as never }, { $set: { url: receiver.url, timeoutMs: 500 } });
    token = await stack.loginDemo();
    aggregatorToken = (
      await stack.rest<{ data: { token: string } }>('POST', '/auth/get-token', {
        body: { user: { login: DEMO.aggregatorLogin, password: DEMO.aggregatorPassword } },
      })
    ).body.data.token;
  });
  afterAll(async () => {
    await stack.stop();
    await receiver.close();
  });

  it('turns a card off and on with the documented response, and declines every message while it is off', async () => {
    const off = await onoff(DEMO.cardIds[0], 'off');
    expect(off.status).toBe(200);
    expect(off.body).toMatchObject({
      success: true,
      status: 'blocked',
      isActive: false,
      userId: DEMO.userId,
      card: { SvcCardId: DEMO.cardIds[0], status: 'blocked', isActive: false },
    });
    expect(off.body.card.num).toMatch(/^5375 \*{4} \*{4} \d{4}$/);
    for (const messageType of ['0100', '0200', '0220', '0420']) {
      const decision = await authorize(message({ messageType, originalStan: messageType === '0420' ? '123456' : undefined }));
      expect(decision).toMatchObject({ responseCode: '62', approved: false, decidedBy: 'card', transactionId: null });
    }
    const on = await onoff(DEMO.cardIds[0], 'on');
    expect(on.body).toMatchObject({ status: 'active', isActive: true });
    expect((await authorize(message())).approved).toBe(true);
    const events = await stack.mongo.db('cards').collection('outbox').find({ type: 'card.status' }).toArray();
    expect(events.map((e) => (e.payload as { status: string }).status)).toEqual(['blocked', 'active']);
  });

  it('asks the aggregator for requests, over a signed webhook, and follows its responseCode', async () => {
    receiver.setMode({ reply: '00' });
    const approved = await authorize(message({ messageType: '0100' }));
    expect(approved).toMatchObject({ responseCode: '00', decidedBy: 'aggregator', transactionId: null });
    const last = receiver.received.at(-1)!;
    expect(last.verified).toBe(true);
    expect(last.payload).toMatchObject({
      type: 'card.authorization',
      messageType: '0100',
      actionType: 'request',
      card: { svcCardId: DEMO.cardIds[0] },
    });
    expect(JSON.stringify(last.payload)).not.toMatch(/\d{16}/);
    receiver.setMode({ reply: '51' });
    expect(await authorize(message({ messageType: '0200' }))).toMatchObject({
      responseCode: '51',
      approved: false,
      decidedBy: 'aggregator',
      transactionId: null,
    });
    receiver.setMode({ reply: '00' });
  });

  it('records an approved financial request and a reversal as transactions in the payments subgraph', async () => {
    const before = await stack.mongo
      .db('payments')
      .collection('accounts')
      .findOne({ _id: DEMO.accountId as never });
    const purchaseMessage = message({ messageType: '0200', amount: 40 });
    const purchase = await authorize(purchaseMessage);
    expect(purchase.approved).toBe(true);
    expect(purchase.transactionId).toMatch(/^txn_msg_0200_/);
    // Asking to reverse more than was debited credits back only what was debited.
    const reversal = await authorize(message({ messageType: '0420', amount: 55, originalStan: purchaseMessage.stan }));
    expect(reversal).toMatchObject({ approved: true, decidedBy: 'card' });
    const again = await authorize(message({ messageType: '0420', amount: 40, originalStan: purchaseMessage.stan }));
    expect(again).toMatchObject({ approved: true, transactionId: null });
    const unknown = await authorize(message({ messageType: '0420', amount: 40, originalStan: '999999' }));
    expect(unknown).toMatchObject({ approved: true, transactionId: null });
    // Payments records them from the decided messages' events, after the answers: within the documented bound.
    const recorded = () =>
      stack.mongo
        .db('payments')
        .collection<{ amount: number }>('transactions')
        .find({ _id: { $in: [purchase.transactionId, reversal.transactionId] } as never, posted: { $ne: false } })
        .toArray();
    const transactions = await until(recorded, (found) => found.length === 2, 5000);
    // Stored in cents.
    expect(transactions.map((t) => t.amount).sort()).toEqual([-4000, 4000]);
    const after = await stack.mongo
      .db('payments')
      .collection('accounts')
      .findOne({ _id: DEMO.accountId as never });
    expect(after?.balance).toBe(before?.balance);
    const advice = await authorize(message({ messageType: '0220', amount: 12.5 }));
    expect(advice).toMatchObject({ responseCode: '00', decidedBy: 'card' });
    expect(advice.transactionId).toBeTruthy();
  });

  it('answers a retransmitted message the same, recording one transaction, even when the copies race', async () => {
    const input = message({ messageType: '0200', amount: 7 });
    const [first, second] = await Promise.all([authorize(input), authorize(input)]);
    expect(second).toEqual(first);
    expect(await authorize(input)).toEqual(first);
    // Advices of earlier tests may still arrive (they are delivered after the decision): count this message's.
    expect(receiver.received.filter((w) => w.payload.rrn === input.rrn)).toHaveLength(1);
    const recorded = () =>
      stack.mongo
        .db('payments')
        .collection('transactions')
        .countDocuments({ _id: first.transactionId as never });
    expect(await until(recorded, (n) => n > 0, 5000)).toBe(1);
    const otherAmount = await authorize({ ...input, amount: 8 });
    expect(otherAmount).toMatchObject({ responseCode: '94', approved: false });
  });

  it('applies the default strategy when the aggregator is silent, down or malformed', async () => {
    receiver.setMode({ silent: true });
    const silent = await authorize(message());
    expect(silent).toMatchObject({ responseCode: '05', decidedBy: 'defaultStrategy' });
    receiver.setMode({ status: 500 });
    expect(await authorize(message())).toMatchObject({ responseCode: '05', decidedBy: 'defaultStrategy' });
    await stack.mongo
      .db('cards')
      .collection('webhookConfigs')
      .updateOne({ _id: DEMO.aggregatorId as never }, { $set: { defaultStrategy: 'approve', url: 'http://127.0.0.1:9/down' } });
    expect(await authorize(message())).toMatchObject({ responseCode: '00', decidedBy: 'defaultStrategy' });
    await stack.mongo
      .db('cards')
      .collection('webhookConfigs')
      .updateOne({ _id: DEMO.aggregatorId as never }, { $set: { defaultStrategy: 'decline', url: receiver.url } });
    receiver.setMode({ reply: '00' });
  });

  it("applies the user's restrictions through the graph before asking the aggregator", async () => {
    const [over, euros] = [message({ amount: 7500 }), message({ currency: 'EUR' })];
    const overLimit = await authorize(over);
    expect(overLimit).toMatchObject({ responseCode: '57', decidedBy: 'restriction' });
    const otherCurrency = await authorize(euros);
    expect(otherCurrency).toMatchObject({ responseCode: '57', approved: false });
    // The aggregator was not asked about either.
    expect(receiver.received.filter((w) => w.payload.rrn === over.rrn || w.payload.rrn === euros.rrn)).toEqual([]);
  });

  it('declines an unknown card and refuses bad messages naming the field', async () => {
    expect(await authorize(message({ svcCardId: 'no_such_card' }))).toMatchObject({ responseCode: '14' });
    const bad = await stack.graphql(
      'mutation ($input: CardMessageInput!) { authorizeCardMessage(input: $input) { responseCode } }',
      { input: message({ messageType: '0800' }) },
      { 'x-service-key': PROCESSOR_KEY },
    );
    expect(bad.body.errors?.[0]?.extensions).toMatchObject({ code: 'VALIDATION_FAILED', field: 'messageType' });
    const noOriginal = await stack.graphql(
      'mutation ($input: CardMessageInput!) { authorizeCardMessage(input: $input) { responseCode } }',
      { input: message({ messageType: '0420' }) },
      { 'x-service-key': PROCESSOR_KEY },
    );
    expect(noOriginal.body.errors?.[0]?.extensions).toMatchObject({ field: 'originalStan' });
    const fromUser = await stack.graphql(
      'mutation ($input: CardMessageInput!) { authorizeCardMessage(input: $input) { responseCode } }',
      { input: message() },
      { token },
    );
    expect(fromUser.body.errors?.[0]?.extensions?.code).toBe('FORBIDDEN');
  });

  it('modifies only name and isMain, keeps one main card, and ignores other properties', async () => {
    const response = await stack.rest<{ success: boolean; card: CardBody; userId: string }>('POST', `/cards/${DEMO.cardIds[1]}`, {
      headers: { token },
      body: { name: 'Travel', isMain: true, status: 'active', num: '4111111111111111', currency: 'EUR' },
    });
    expect(response.status).toBe(200);
    expect(response.body).toMatchObject({
      success: true,
      userId: DEMO.userId,
      card: { SvcCardId: DEMO.cardIds[1], name: 'Travel', isMain: true, status: 'blocked' },
    });
    const stored = await stack.mongo.db('cards').collection('cards').find({ SvcUserId: DEMO.userId }).toArray();
    expect(stored.filter((c) => c.isMain).map((c) => c._id)).toEqual([DEMO.cardIds[1]]);
    expect(stored.find((c) => c._id === (DEMO.cardIds[1] as never))).toMatchObject({ currency: 'USD', num: '5375 **** **** 7730' });
    const tooLong = await stack.rest<{ error: { field: string } }>('POST', `/cards/${DEMO.cardIds[1]}`, {
      headers: { token },
      body: { name: 'x'.repeat(51) },
    });
    expect(tooLong.status).toBe(400);
    expect(tooLong.body.error.field).toBe('name');
    const badSwitch = await stack.rest('POST', `/cards/${DEMO.cardIds[1]}/sideways`, { headers: { token } });
    expect(badSwitch.status).toBe(400);
  });

  it("does not let a second user see or change the first user's card", async () => {
    const users = usersCollection(stack.mongo.db('user'));
    const demo = await users.findOne({ _id: DEMO.userId });
    await users.insertOne({ ...demo!, _id: 'second_user', SvcUserId: 'second_user' });
    const second = await stack.issueUserToken('second_user');
    expect((await onoff(DEMO.cardIds[0], 'off', second)).status).toBe(404);
    expect((await stack.rest('POST', `/cards/${DEMO.cardIds[0]}`, { headers: { token: second }, body: { name: 'mine now' } })).status).toBe(
      404,
    );
    const card = await stack.mongo
      .db('cards')
      .collection('cards')
      .findOne({ _id: DEMO.cardIds[0] as never });
    expect(card).toMatchObject({ status: 'active', name: 'Everyday' });
    const seen = await stack.graphql<{ me: { cards: unknown[] } }>('{ me { cards { SvcCardId } } }', {}, { token: second });
    expect(seen.body.data?.me.cards).toEqual([]);
    const entity = await stack.graphql<{ me: { cards: Array<{ SvcCardId: string }> } }>('{ me { cards { SvcCardId } } }', {}, { token });
    expect(entity.body.data?.me.cards.map((c) => c.SvcCardId)).toContain(DEMO.cardIds[0]);
  });

  describe('the webhook sandbox', () => {
    const run = (body: Record<string, unknown>) =>
      stack.rest<{
        code: string;
        data: Array<{
          code: string[];
          name: string;
          responseData: { responseCode?: string; error?: { code: string; message: string } };
          time: number;
          pass: boolean;
        }>;
        field?: string;
      }>('POST', '/ibis-sandbox/webhook/init', { headers: { 'x-svc-token': aggregatorToken }, body });

    it('runs every case with one signed webhook each, and passes against an endpoint that answers 00', async () => {
      receiver.setMode({ reply: '00' });
      const before = receiver.received.length;
      const response = await run({ svcCardId: DEMO.testCardId });
      expect(response.status).toBe(200);
      expect(response.body.data.map((r) => r.code)).toEqual([
        ['t001_01', '01'],
        ['t001_02', '02'],
        ['t002_01', '01'],
        ['t003_01', '01'],
        ['t004_01', '01'],
        ['t005_01', '01'],
      ]);
      expect(response.body.data.every((r) => r.pass)).toBe(true);
      expect(response.body.data[1]?.responseData).toEqual({ responseCode: '05' });
      expect(receiver.received.slice(before).filter((w) => 'sandbox' in w.payload)).toHaveLength(6);
      expect(receiver.received.slice(before).every((w) => w.verified)).toBe(true);
    });

    it('fails the cases an endpoint answers with another code, or not at all, or while down', async () => {
      receiver.setMode({ reply: '51' });
      const declines = await run({ svcCardId: DEMO.testCardId, sandBoxCases: ['t001_01', 't001_02'] });
      expect(declines.body.data.map((r) => [r.responseData.responseCode, r.pass])).toEqual([
        ['51', true],
        ['51', true],
      ]);
      receiver.setMode({ silent: true });
      const silent = await run({ svcCardId: DEMO.testCardId, sandBoxCases: ['t005_01'] });
      expect(silent.body.data[0]).toMatchObject({ pass: false, responseData: { error: { code: 'responseCode' } } });
      expect(silent.body.data[0]!.time).toBeGreaterThanOrEqual(900);
      await stack.mongo
        .db('cards')
        .collection('webhookConfigs')
        .updateOne({ _id: DEMO.aggregatorId as never }, { $set: { url: 'http://127.0.0.1:9/down' } });
      const down = await run({ svcCardId: DEMO.testCardId, sandBoxCases: ['t002_01', 't003_01'] });
      expect(down.body.data.every((r) => !r.pass && r.responseData.error?.code === 'responseCode')).toBe(true);
      await stack.mongo
        .db('cards')
        .collection('webhookConfigs')
        .updateOne({ _id: DEMO.aggregatorId as never }, { $set: { url: receiver.url } });
      receiver.setMode({ reply: '00' });
    });

    it('refuses a card that is not a test card, an unknown case, and an aggregator without a webhook', async () => {
      const notTest = await run({ svcCardId: DEMO.cardIds[0] });
      expect(notTest.status).toBe(400);
      expect(notTest.body.field).toBe('svcCardId');
      const unknownCase = await run({ svcCardId: DEMO.testCardId, sandBoxCases: ['t009_01'] });
      expect(unknownCase.status).toBe(400);
      expect(unknownCase.body.field).toBe('sandBoxCases[0]');
      await stack.mongo
        .db('cards')
        .collection('webhookConfigs')
        .deleteOne({ _id: DEMO.aggregatorId as never });
      const none = await run({ svcCardId: DEMO.testCardId });
      expect(none.status).toBe(409);
      const asService = await stack.graphql(
        'mutation ($input: WebhookConfigInput!) { configureWebhook(input: $input) { secret } }',
        { input: { svcAggregatorId: DEMO.aggregatorId, url: 'http://127.0.0.1:1/steal', defaultStrategy: 'approve', rotateSecret: true } },
        { 'x-service-key': PROCESSOR_KEY },
      );
      // Outside the card processor key's scope: refused at the gateway.
      expect(asService.body.errors?.[0]?.extensions?.code).toBe('FORBIDDEN');
      const configured = await stack.graphql<{ configureWebhook: { secret: string | null; defaultStrategy: string } }>(
        'mutation ($input: WebhookConfigInput!) { configureWebhook(input: $input) { secret defaultStrategy timeoutMs } }',
        { input: { url: receiver.url, defaultStrategy: 'decline', timeoutMs: 500 } },
        { 'x-svc-token': aggregatorToken },
      );
      expect(configured.body.data?.configureWebhook.secret).toMatch(/^whsec_/);
    });
  });

  describe('the deprecated card-add', () => {
    const add = (body: Record<string, unknown>) =>
      stack.rest<{ code: string; data: Record<string, unknown> & { additional_data: Record<string, string> }; field?: string }>(
        'POST',
        '/condor/card/add',
        { headers: { 'x-svc-token': aggregatorToken }, body },
      );
    const attributes = {
      productID: 'prod_1',
      nameOnCard: 'Dana Demo',
      designId: 'blue',
      addressType: 'home',
      issueType: 'secondary',
      additionalData: { designId: 'blue-v2' },
    };

    it('adds a secondary debit card on a new checking account, with the Card-add result shape', async () => {
      const response = await add({ customerId: DEMO.userId, cardAttributes: attributes });
      expect(response.status).toBe(200);
      expect(response.body.code).toBe('0');
      expect(response.body.data).toMatchObject({
        status: 'active',
        program_id: 'prod_1',
        name_on_card: 'DANA DEMO',
        available_balance: 0,
        currency_code: 'USD',
      });
      expect(response.body.data.last_four).toMatch(/^\d{4}$/);
      expect(response.body.data.additional_data).toMatchObject({ design_id: 'blue', designId: 'blue-v2', routing_number: '026009593' });
      expect(response.body.data.additional_data.account_number).toMatch(/^\*{4} \d{4}$/);
      expect(response.body.data.additional_data.card_expiration).toMatch(/^(0[1-9]|1[0-2])\d{4}$/);
      const account = await stack.mongo
        .db('payments')
        .collection('accounts')
        .findOne({ _id: response.body.data.additional_data.accountId as never });
      expect(account).toMatchObject({ SvcUserId: DEMO.userId, type: 'checking' });
    });

    it.each(['productID', 'nameOnCard', 'designId', 'addressType', 'issueType'])(
      'answers 400 when cardAttributes.%s is missing',
      async (field) => {
        const { [field as keyof typeof attributes]: _omitted, ...rest } = attributes;
        const response = await add({ customerId: DEMO.userId, cardAttributes: rest });
        expect(response.status).toBe(400);
        expect(response.body.field).toBe(`cardAttributes.${field}`);
      },
    );

    it('answers 404 for an unknown customer, and for a user who is not a customer of this aggregator', async () => {
      expect((await add({ customerId: 'nobody_here', cardAttributes: attributes })).status).toBe(404);
      // second_user exists (made by an earlier test) but holds no card of the demo aggregator's program.
      const notOurs = await add({ customerId: 'second_user', cardAttributes: attributes });
      expect(notOurs.status).toBe(404);
      expect(await stack.mongo.db('payments').collection('accounts').countDocuments({ SvcUserId: 'second_user' })).toBe(0);
    });
  });
});
