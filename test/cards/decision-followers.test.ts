import { GraphQLError } from 'graphql';
import { MongoClient } from 'mongodb';
import { afterAll, describe, expect, it } from 'vitest';
import type { GraphClient } from '../../platform/contracts/graph.js';
import { InProcessBus, type BusEvent } from '../../platform/messaging/event-bus.js';
import type { OutboxEvent } from '../../platform/contracts/events.js';
import { CarriedInPart } from '../../platform/messaging/outbox.js';
import { Deliveries } from '../../platform/messaging/deliveries.js';
import { createLogger } from '../../platform/runtime/logger.js';
import { aggregatorEndpoints } from '../../subgraphs/cards/src/webhooks/advice-deliveries.js';
import { decisionFollowers } from '../../subgraphs/cards/src/authorization/followers.js';

/** Payments as the lane calls it: records what it is sent, or fails as told. */
class FakePayments implements GraphClient {
  sent: Array<Array<{ messageId: string }>> = [];
  failWith: Error | null = null;
  async request<T>(_query: string, variables: Record<string, unknown> = {}): Promise<T> {
    if (this.failWith) throw this.failWith;
    this.sent.push(variables.input as Array<{ messageId: string }>);
    return { recordCardTransactions: { recorded: 0, alreadyRecorded: 0 } } as T;
  }
}

/** A bus that fails from its `failFrom`-th publish on. */
class FailingBus extends InProcessBus {
  published: string[] = [];
  constructor(private readonly failFrom = Infinity) {
    super();
  }
  override async publish(event: BusEvent): Promise<void> {
    if (this.published.length + 1 >= this.failFrom) throw new Error('bus away');
    this.published.push(event.id);
  }
}

const decided = (messageId: string, withTransaction: boolean): OutboxEvent => ({
  _id: messageId,
  type: 'card.authorization',
  audience: { SvcUserId: 'u1' },
  dtsCreated: new Date(),
  dtsPublished: null,
  payload: {
    messageId,
    messageType: '0200',
    SvcCardId: 'c1',
    responseCode: '00',
    decidedBy: 'aggregator',
    transactionId: withTransaction ? `txn_${messageId}` : null,
    transaction: withTransaction
      ? {
          SvcAccountId: 'a1',
          SvcUserId: 'u1',
          SvcCardId: 'c1',
          direction: 'debit',
          amount: '1.00',
          currency: 'USD',
          narrative: null,
          reference: null,
          holdId: null,
        }
      : null,
    releasesHold: null,
  },
});

// No event here is an advice, so neither the database nor the delivery log is reached.
const client = new MongoClient('mongodb://127.0.0.1:1', { serverSelectionTimeoutMS: 100 });
const unusedDeliveries = new Deliveries(
  client.db('cards'),
  null,
  createLogger('silent'),
  { scheduleMs: [0], disableAfter: 10, allowInternal: true },
  aggregatorEndpoints(client.db('cards')),
);

describe('the lane that carries decided card messages', () => {
  afterAll(async () => {
    unusedDeliveries.close();
    await client.close();
  });

  it('publishes every message and sends payments only the transactions, in one call', async () => {
    const [bus, payments] = [new FailingBus(), new FakePayments()];
    const lane = decisionFollowers(bus, payments, client.db('cards'), unusedDeliveries);
    await lane.send([decided('m1', true), decided('m2', false), decided('m3', true)]);
    expect(bus.published).toEqual(['m1', 'm2', 'm3']);
    expect(payments.sent.map((batch) => batch.map((t) => t.messageId))).toEqual([['m1', 'm3']]);
    await lane.send([decided('m4', false)]);
    expect(payments.sent).toHaveLength(1);
  });

  it('sends a batch published in part again whole: the error is not a partial carry', async () => {
    const lane = decisionFollowers(new FailingBus(2), new FakePayments(), client.db('cards'), unusedDeliveries);
    const failure = await lane.send([decided('m5', true), decided('m6', true)]).then(
      () => null,
      (error: unknown) => error,
    );
    expect(failure).toBeInstanceOf(Error);
    expect(failure).not.toBeInstanceOf(CarriedInPart);
  });

  it('parks a message only for what payments refuses in it, never for a mutation it does not know yet', () => {
    const lane = decisionFollowers(new FailingBus(), new FakePayments(), client.db('cards'), unusedDeliveries);
    const refusal = (code: string) => new GraphQLError('refused', { extensions: { code } });
    expect(lane.refuses?.(refusal('VALIDATION_FAILED'))).toBe(true);
    expect(lane.refuses?.(refusal('GRAPHQL_VALIDATION_FAILED'))).toBe(false);
    expect(lane.refuses?.(refusal('BAD_REQUEST'))).toBe(false);
    expect(lane.refuses?.(new Error('ECONNREFUSED'))).toBe(false);
  });
});
